"""Alternates tapegrad's eager tensor ops (build/release/eager_bench) with PyTorch's on the same
16 MiB f32 tensors, op by op and round by round (the machine is shared and noisy), and prints
per op the median time of each contender, tapegrad's GB/s against the copy bandwidth measured
in the same run, and the ratio torch time / tapegrad time (> 1: tapegrad is faster).

    /usr/bin/python3 bench/compare_eager.py --exe build/release/eager_bench --threads 1 --rounds 3

For comparison only: torch is never a dependency of tapegrad's build or tests."""
import argparse
import json
import statistics
import subprocess
import sys
import time

import torch

SIDE = 2048
OPS = ["copy", "add", "add_bcast", "exp", "sum_all", "sum_last", "argmax_last", "transpose_copy"]


def torch_ops():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(SIDE, SIDE, generator=g)
    b = torch.randn(SIDE, SIDE, generator=g)
    row = torch.randn(SIDE, generator=g)
    dst = torch.empty(SIDE, SIDE)
    return {
        "copy": lambda: dst.copy_(a),
        "add": lambda: a + b,
        "add_bcast": lambda: a + row,
        "exp": lambda: torch.exp(a),
        "sum_all": lambda: a.sum(),
        "sum_last": lambda: a.sum(1),
        "argmax_last": lambda: a.argmax(1),
        "transpose_copy": lambda: a.t().contiguous(),
    }


def median_ms(f, min_time):  # the same rule as eager_bench: one warm-up, >= 5 calls, >= min_time
    f()
    ms, start = [], time.perf_counter()
    while len(ms) < 5 or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        f()
        ms.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(ms)


def tapegrad_ms(exe, op, threads, min_time):
    r = subprocess.run([exe, "--op", op, "--threads", str(threads), "--min-time", str(min_time), "--json"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{exe} --op {op} failed:\n{r.stdout}\n{r.stderr}")
    return json.loads(r.stdout.splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default="build/release/eager_bench")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--ops", nargs="+", default=OPS, choices=OPS)
    ap.add_argument("--json", help="also write the raw figures to this file")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    tops = torch_ops()
    ops = a.ops if "copy" in a.ops else ["copy"] + a.ops
    tg_ms = {op: [] for op in ops}
    th_ms = {op: [] for op in ops}
    mib = {}
    for r in range(a.rounds):
        for op in ops:  # alternate the contenders op by op, with a pause so neither inherits spinning threads
            first_torch = r % 2 == 1
            if first_torch:
                th_ms[op].append(median_ms(tops[op], a.min_time))
                time.sleep(0.5)
            row = tapegrad_ms(a.exe, op, a.threads, a.min_time)
            tg_ms[op].append(row["median_ms"])
            mib[op] = row["mib"]
            time.sleep(0.5)
            if not first_torch:
                th_ms[op].append(median_ms(tops[op], a.min_time))
                time.sleep(0.5)
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr, flush=True)
    gbps = lambda op, ms: mib[op] * 1024 * 1024 / (ms * 1e6)
    copy_gbps = gbps("copy", statistics.median(tg_ms["copy"]))
    print(f"threads {a.threads}, {a.rounds} rounds, medians; copy bandwidth (memcpy 16 MiB) {copy_gbps:.1f} GB/s")
    print(f"| op | MiB moved | tapegrad ms | GB/s | % of copy | torch ms | torch GB/s | torch / tapegrad |")
    print(f"|---|---:|---:|---:|---:|---:|---:|---:|")
    out = {"threads": a.threads, "rounds": a.rounds, "copy_gb_per_s": copy_gbps, "ops": {}}
    for op in ops:
        t, p = statistics.median(tg_ms[op]), statistics.median(th_ms[op])
        ratios = [pp / tt for tt, pp in zip(tg_ms[op], th_ms[op])]
        print(f"| {op} | {mib[op]:.0f} | {t:.3f} | {gbps(op, t):.1f} | {100 * gbps(op, t) / copy_gbps:.0f}% | "
              f"{p:.3f} | {gbps(op, p):.1f} | {statistics.median(ratios):.2f} (runs {', '.join(f'{x:.2f}' for x in ratios)}) |")
        out["ops"][op] = {"tapegrad_ms": tg_ms[op], "torch_ms": th_ms[op], "mib": mib[op]}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
