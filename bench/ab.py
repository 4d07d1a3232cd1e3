#!/usr/bin/env python3
"""A/B timing of two tapegrad builds (or two settings of one), alternated shape by shape.

The machine this project runs on is shared and changes speed for minutes at a time; two
programs timed one after the other can differ by 20-50% for no reason of their own. This
script runs `tapegrad bench --only NAME --json` for A and B in turn, per shape and op,
swapping which goes first every round, and prints the medians and B/A per (shape, op) and
their geometric mean. B/A < 1: B is faster.

  bench/ab.py --a old/tapegrad --b build/release/tapegrad --shapes bench/shapes.json
  bench/ab.py --a build/release/tapegrad --env-b TAPEGRAD_SMALL_CONV=never --only vol3d_k4s2
  bench/ab.py ... --threads 1 --clock cpu --rounds 5 --ops fwd,bwd_weights

--env-a / --env-b set environment variables (KEY=VALUE, repeatable) for one side only, so
one binary can be set against itself (TAPEGRAD_SIMD=avx2, TAPEGRAD_SMALL_CONV=..., ...).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", required=True, help="the tapegrad executable A")
    p.add_argument("--b", help="the tapegrad executable B (default: A, with --env-b)")
    p.add_argument("--shapes", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "shapes.json"),
                   help="a shapes file (default: bench/shapes.json)")
    p.add_argument("--only", action="append", default=[], help="a shape's name (repeatable; default: every shape)")
    p.add_argument("--ops", default="fwd,bwd_data,bwd_weights", help="tapegrad bench --ops")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3, help="runs of each side per shape (alternated)")
    p.add_argument("--min-time", default="0.2", help="tapegrad bench --min-time (seconds per op)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="cpu: CPU time (1 thread only)")
    p.add_argument("--env-a", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--env-b", action="append", default=[], metavar="KEY=VALUE")
    a = p.parse_args()
    if a.b is None and not a.env_b and not a.env_a:
        p.error("--b or --env-a/--env-b is needed: A against itself measures nothing")
    if a.rounds < 1:
        p.error(f"--rounds must be at least 1, got {a.rounds}")
    if a.clock == "cpu" and a.threads != 1:
        p.error(f"--clock cpu times one thread only, got --threads {a.threads}")
    return a


def environment(pairs, flag):
    env = dict(os.environ)
    for kv in pairs:
        if "=" not in kv:
            sys.exit(f"error: {flag} wants KEY=VALUE, got '{kv}'")
        k, v = kv.split("=", 1)
        env[k] = v
    return env


def shape_names(path):
    with open(path) as f:
        doc = json.load(f)
    shapes = doc["shapes"] if isinstance(doc, dict) else doc
    return [s["name"] for s in shapes]


def run(exe, env, a, name):
    cmd = [exe, "bench", "--shapes", a.shapes, "--only", name, "--json", "--ops", a.ops,
           "--threads", str(a.threads), "--min-time", a.min_time, "--clock", a.clock]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed: {out.stderr.strip()}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def main():
    a = parse_args()
    exes = []
    for flag, exe in (("--a", a.a), ("--b", a.b or a.a)):
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            sys.exit(f"error: {flag} '{exe}' is not an executable file")
        exes.append(os.path.abspath(exe))
    sides = [(exes[0], environment(a.env_a, "--env-a")), (exes[1], environment(a.env_b, "--env-b"))]
    names = a.only or shape_names(a.shapes)
    times = {}  # (shape, op) -> ([A ms], [B ms])
    for name in names:
        for r in range(a.rounds):
            for side in ((0, 1) if r % 2 == 0 else (1, 0)):
                exe, env = sides[side]
                for rec in run(exe, env, a, name):
                    times.setdefault((name, rec["op"]), ([], []))[side].append(rec["median_ms"])
    logs = []
    print(f"{'shape':28s} {'op':12s} {'A ms':>9s} {'B ms':>9s} {'B/A':>6s}")
    for (name, op), (ta, tb) in times.items():
        ma, mb = statistics.median(ta), statistics.median(tb)
        logs.append(math.log(mb / ma))
        print(f"{name:28s} {op:12s} {ma:9.3f} {mb:9.3f} {mb / ma:6.3f}")
    if logs:
        print(f"geomean B/A {math.exp(sum(logs) / len(logs)):.3f} over {len(logs)} (shape, op) pairs, "
              f"{a.rounds} alternated rounds, {a.threads} thread(s), {a.clock} clock")


if __name__ == "__main__":
    main()
