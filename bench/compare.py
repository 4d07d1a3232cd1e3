#!/usr/bin/python3
"""Alternates tapegrad's bench_convt with PyTorch on the shapes of shapes.json and prints
medians and the ratio (torch time / tapegrad time: > 1 means tapegrad is faster).

    /usr/bin/python3 bench/compare.py --exe build/release/bench_convt [--threads 1 2] [--rounds 3]

Needs Debian's python3-torch (for /usr/bin/python3); only the benchmark uses it. The
machine is shared and sometimes throttled: each round runs both contenders back to back,
and the medians over rounds are reported.
"""
import argparse
import json
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F


def torch_times(s, reps):
    D = s["dims"]
    conv_t = [None, F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d][D]
    x = torch.rand([s["N"], s["C_in"]] + s["input"]) * 2 - 1
    w = torch.rand([s["C_in"], s["C_out"] // s["groups"]] + s["kernel"]) * 2 - 1
    kw = dict(stride=s["strides"], padding=s["pads_begin"], output_padding=s["output_padding"],
              dilation=s["dilations"], groups=s["groups"])
    assert s["pads_begin"] == s["pads_end"]

    def fwd():
        with torch.no_grad():
            conv_t(x, w, **kw)

    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    y = conv_t(xg, wg, **kw)
    dy = torch.rand_like(y)

    def bwd():
        torch.autograd.grad(y, [xg, wg], dy, retain_graph=True)

    out = []
    for f in (fwd, bwd):
        f()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f()
            ts.append((time.perf_counter() - t0) * 1e3)
        out.append(statistics.median(ts))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", default="build/release/bench_convt")
    ap.add_argument("--shapes", default="../shared/bench/shapes.json")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default=None)
    a = ap.parse_args()
    shapes = json.load(open(a.shapes))["shapes"]
    print("%-16s %3s %9s %9s %7s %9s %9s %7s %8s" % ("shape", "thr", "tg fwd", "GF/s", "x torch",
                                                    "tg bwd", "GF/s", "x torch", "peak MiB"))
    for thr in a.threads:
        torch.set_num_threads(thr)
        for s in shapes:
            if a.only and s["name"] != a.only:
                continue
            ours, theirs = [], []
            for _ in range(a.rounds):
                r = subprocess.run([a.exe, "--shapes", a.shapes, "--only", s["name"], "--threads", str(thr),
                                    "--reps", str(a.reps), "--json"], capture_output=True, text=True, check=True)
                ours.append(json.loads(r.stdout.strip().splitlines()[-1]))
                theirs.append(torch_times(s, a.reps))
            fwd = statistics.median(o["fwd_ms"] for o in ours)
            bwd = statistics.median(o["bwd_ms"] for o in ours)
            tf = statistics.median(t[0] for t in theirs)
            tb = statistics.median(t[1] for t in theirs)
            mf = ours[0]["mflop"]
            peak = max(o["peak_mib"] for o in ours)
            print("%-16s %3d %9.3f %9.1f %7.2f %9.3f %9.1f %7.2f %8.1f" % (
                s["name"], thr, fwd, mf / fwd, tf / fwd, bwd, 2 * mf / bwd, tb / bwd, peak), flush=True)


if __name__ == "__main__":
    main()
