#!/bin/sh
# Runs every case of examples/cases (the worked examples of docs/ops.md) through
# `tapegrad explain` and `tapegrad run`, and compares the files written with the
# hand-computed expected*.npy next to each case. Works on a temporary copy, so the source
# tree stays clean. Needs only the tapegrad binary and a plain python3 (standard library).
#
#   examples/run_worked_examples.sh build/release/tapegrad [-v]
#
# -v prints the `tapegrad explain` output of every case.
set -u
if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 path/to/tapegrad [-v]" >&2
    exit 2
fi
exe=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
verbose=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# compare.py EXPECTED GOT: exact equality of shape and values (every number is a small
# integer), reading the .npy subset tapegrad writes: version 1-3, little-endian, C order.
cat >"$tmp/compare.py" <<'EOF'
import ast, struct, sys

def load(path):
    b = open(path, "rb").read()
    if b[:6] != b"\x93NUMPY":
        sys.exit("%s: not an .npy file" % path)
    n, start = (struct.unpack("<H", b[8:10])[0], 10) if b[6] == 1 else (struct.unpack("<I", b[8:12])[0], 12)
    h = ast.literal_eval(b[start:start + n].decode("latin1"))
    fmt = {"<f8": "d", "<f4": "f", "<f2": "e", "<i8": "q", "<i4": "i"}[h["descr"]]
    if h["fortran_order"]:
        sys.exit("%s: Fortran order not expected" % path)
    count = 1
    for d in h["shape"]:
        count *= d
    return tuple(h["shape"]), list(struct.unpack("<%d%s" % (count, fmt), b[start + n:]))

(es, ev), (gs, gv) = load(sys.argv[1]), load(sys.argv[2])
if es != gs or ev != gv:
    sys.exit("expected shape %s values %s\n       got shape %s values %s" % (es, ev, gs, gv))
EOF

pass=0
fail=0
for case_json in "$here"/cases/*/case.json; do
    name=$(basename "$(dirname "$case_json")")
    work="$tmp/$name"
    cp -R "$(dirname "$case_json")" "$work"
    problem=""
    if [ -f "$work/expected_error.txt" ]; then
        key=$(cat "$work/expected_error.txt")
        if "$exe" run "$work/case.json" >"$work/stdout.txt" 2>"$work/stderr.txt"; then
            problem="run succeeded, an error naming '$key' was expected"
        elif [ "$(wc -l <"$work/stderr.txt")" -ne 1 ] || ! grep -q "^error: .*$key" "$work/stderr.txt"; then
            problem="stderr is not one 'error:' line naming '$key': $(cat "$work/stderr.txt")"
        elif [ -e "$work/out.npy" ]; then
            problem="a failed run left out.npy behind"
        fi
    elif ! "$exe" explain "$work/case.json" >"$work/explain.txt" 2>"$work/stderr.txt"; then
        problem="explain failed: $(cat "$work/stderr.txt")"
    elif ! "$exe" run "$work/case.json" 2>"$work/stderr.txt"; then
        problem="run failed: $(cat "$work/stderr.txt")"
    else
        for expected in "$work"/expected*.npy; do
            file=$(basename "$expected")
            if [ "$file" = expected.npy ]; then got=out.npy; else got=${file#expected_}; fi
            if [ ! -f "$work/$got" ]; then
                problem="$problem $got was not written;"
            elif ! msg=$(python3 "$tmp/compare.py" "$expected" "$work/$got" 2>&1); then
                problem="$problem $got: $msg;"
            fi
        done
    fi
    if [ -n "$problem" ]; then
        echo "FAIL $name: $problem"
        fail=$((fail + 1))
    else
        echo "ok   $name"
        pass=$((pass + 1))
    fi
    if [ "$verbose" = "-v" ] && [ -f "$work/explain.txt" ]; then sed 's/^/     | /' "$work/explain.txt"; fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
