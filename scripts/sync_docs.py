#!/usr/bin/env python3
"""Copies every code region named above a cpp block of README.md and docs/*.md into that block.

    python3 scripts/sync_docs.py          # rewrites the blocks that differ, lists them
    python3 scripts/sync_docs.py --check  # lists them only (exit 1 if any differs)

A block is tied to its code by the line above it, <!-- code: FILE#REGION -->; in FILE the region
is the lines between `// doc-begin: REGION` and `// doc-end: REGION`, less their common
indentation. tests/test_docs.cpp fails while any block differs from its region, so the docs
show code the build compiles; this script is how a change to that code reaches the docs."""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"(<!-- code: ([^#\s]+)#(\S+) -->\n```cpp\n)(.*?)(```\n)", re.S)


def region(path, name):
    lines, inside, out = open(os.path.join(ROOT, path)).read().split("\n"), False, []
    for line in lines:
        t = line.strip()
        if t == "// doc-begin: " + name:
            inside = True
        elif t == "// doc-end: " + name:
            break
        elif inside:
            out.append(line)
    if not inside:
        sys.exit(f"{path}: no region '{name}'")
    indent = min((len(l) - len(l.lstrip(" ")) for l in out if l.strip()), default=0)
    return "".join((l[indent:] if l.strip() else "") + "\n" for l in out)


def main():
    check = "--check" in sys.argv[1:]
    changed = []
    for md in [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        text = open(md).read()
        new = BLOCK.sub(lambda m: m.group(1) + region(m.group(2), m.group(3)) + m.group(5), text)
        if new != text:
            changed.append(os.path.relpath(md, ROOT))
            if not check:
                open(md, "w").write(new)
    for c in changed:
        print(("differs: " if check else "updated: ") + c)
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
