#!/usr/bin/python3
"""Alternates `tapegrad bench` with PyTorch on the transposed-convolution shapes of
shapes.json and prints medians, GFLOP/s and ratios (torch time / tapegrad time: > 1 means
tapegrad is faster).

    /usr/bin/python3 bench/compare_torch.py --exe build/release/tapegrad \\
        [--shapes bench/shapes.json] [--threads 1 2] [--rounds 3] [--only NAME] \\
        [--batch N] [--min-time 0.3] [--exclude-from-gemm depthwise_c128,tiny] [--json OUT]

Needs Debian's python3-torch 1.13 (for /usr/bin/python3; the python3 first on PATH may lack
torch); only the benchmark uses it. f32, NCX, inputs uniform in [-1, 1].

Ops (the names of `tapegrad bench`), for y = ConvTranspose(x, w) with x the small input:
  bwd_data     y itself (ConvolutionBackpropData)
  fwd          dX = the ordinary convolution of dy with w
  bwd_weights  dW, the filter gradient
"grads" = fwd + bwd_weights, the two gradients training runs after bwd_data.

Contenders, each op timed like `tapegrad bench` does (one warm-up, then calls for about
--min-time seconds, at least 3, at most 1000; the median):
  torch default  what F.conv_transposeNd and its autograd run: bwd_data = F.conv_transposeNd
                 under no_grad; fwd = torch.autograd.grad(y, [x], dy); bwd_weights =
                 torch.autograd.grad(y, [w], dy). torch 1.13 on the CPU sends all three to
                 its Slow(Transpose)Nd backend (GEMM on the BLAS + col2im/im2col), mkldnn
                 on or off. NB: autograd's dX is not F.convNd: F.convNd would go to oneDNN,
                 which is the other column.
  torch oneDNN   the same maths as ordinary-convolution ops (PEERS.md "torch via conv ops"):
                 bwd_data = aten.convolution_backward(grad_output=x, input=<empty i-side>,
                 weight=w, transposed=False, output_mask=[T, F, F])[0] (the i-side shape given
                 to `input` makes output_padding come out right); fwd = F.convNd(dy, w);
                 bwd_weights = aten.convolution_backward(grad_output=x, input=dy, weight=w,
                 output_mask=[F, T, F])[1]. Once per shape and thread count (untimed) the
                 script asks torch._C._select_conv_backend which backend that convolution
                 takes and checks the three results against the default path (1e-3 relative);
                 a shape that would not run on oneDNN (e.g. `tiny`: N = 1, C = 4, 5x5 goes to
                 Slow2d) or disagrees is printed with the reason and its column skipped.
                 Verified by hand: on dcgan_g2 at 1 thread, under
                 torch.backends.mkldnn.flags(enabled=False) the same three calls take
                 Slow2d and bwd_data / fwd / bwd_weights slow from 7.1-7.3 / 6.4-6.7 /
                 6.5-7.1 ms to 11.1-11.4 / 12.5-12.6 / 9.7-9.8 ms (two passes each), so
                 this column really is oneDNN.

Each round runs tapegrad (one `tapegrad bench --only NAME --json` process, all three ops),
then torch default, then torch oneDNN; medians over --rounds rounds are reported. The
machine is shared and sometimes throttled (PEERS.md): a fixed SGEMM (torch.mm
1024x1024x1024, 1 thread) is timed before and after, and both GFLOP/s are printed.
GFLOP/s = 2*N*C_in*(C_out/groups)*prod(kernel)*prod(input) / time (grads count twice).
"""
import argparse
import json
import math
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

OPS = ("fwd", "bwd_data", "bwd_weights")


def time_ms(f, min_time):
    """One warm-up call, then calls for about min_time seconds (3 to 1000); median ms."""
    f()
    ts = []
    start = time.perf_counter()
    while len(ts) < 1000:
        t0 = time.perf_counter()
        f()
        t1 = time.perf_counter()
        ts.append((t1 - t0) * 1e3)
        if len(ts) >= 3 and t1 - start >= min_time:
            break
    return statistics.median(ts)


def _blas_set_threads():
    """openblas_set_num_threads of the BLAS torch loaded, or None.

    Debian's torch calls the system BLAS (libblas.so.3, by default OpenBLAS's pthreads
    build), whose thread pool torch.set_num_threads does not reach: without this, torch's
    default path ran its GEMMs on every core in "1 thread" runs (measured: torch.mm 1024^3
    182 GFLOP/s "at 1 thread", 96 with the BLAS held to one thread)."""
    import ctypes
    for name in ("libblas.so.3", "libopenblas.so.0"):
        try:
            return ctypes.CDLL(name).openblas_set_num_threads
        except (OSError, AttributeError):
            pass
    return None


BLAS_SET_THREADS = _blas_set_threads()
PAUSE_S = 0.5  # between contenders (see the round loop)


def set_threads(n):
    """n threads for torch's own kernels and for the BLAS it calls."""
    torch.set_num_threads(n)
    if BLAS_SET_THREADS is not None:
        BLAS_SET_THREADS(n)


def sgemm_gflops():
    """torch.mm 1024x1024x1024 at 1 thread: the machine's speed right now."""
    saved = torch.get_num_threads()
    set_threads(1)
    a, b = torch.rand(1024, 1024), torch.rand(1024, 1024)
    ms = time_ms(lambda: torch.mm(a, b), 0.5)
    set_threads(saved)
    return 2 * 1024 ** 3 / (ms * 1e6)


def mflop(s, batch):
    f = 2.0 * batch * s["C_in"] * (s["C_out"] // s["groups"])
    for k, i in zip(s["kernel"], s["input"]):
        f *= k * i
    return f / 1e6


def rel_err(a, b):
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


class TorchShape:
    """The shape's tensors and the two contenders' calls, at the current torch thread count."""

    def __init__(self, s, batch):
        D = s["dims"]
        self.skip = None  # why torch cannot run the shape at all
        self.onednn_skip = None  # why the oneDNN column is skipped
        if D not in (1, 2, 3):
            self.skip = "torch has no %d-D convolution" % D
            return
        if s["pads_begin"] != s["pads_end"]:
            self.skip = "torch pads both ends alike (pads_begin %s != pads_end %s)" % (s["pads_begin"], s["pads_end"])
            return
        for op, st, d in zip(s["output_padding"], s["strides"], s["dilations"]):
            if op >= max(st, d):
                self.skip = "torch needs output_padding < max(stride, dilation)"
                return
        conv_t = [None, F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d][D]
        conv = [None, F.conv1d, F.conv2d, F.conv3d][D]
        G = s["groups"]
        self.x = torch.rand([batch, s["C_in"]] + s["input"]) * 2 - 1
        self.w = torch.rand([s["C_in"], s["C_out"] // G] + s["kernel"]) * 2 - 1
        st, pad, dil, opad = s["strides"], s["pads_begin"], s["dilations"], s["output_padding"]
        with torch.no_grad():
            self.y = conv_t(self.x, self.w, stride=st, padding=pad, output_padding=opad, groups=G, dilation=dil)
        self.dy = torch.rand_like(self.y) * 2 - 1
        x, w, dy = self.x, self.w, self.dy

        # torch default: F.conv_transposeNd and what autograd runs for its two gradients.
        xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
        y_x = conv_t(xr, w, stride=st, padding=pad, output_padding=opad, groups=G, dilation=dil)
        y_w = conv_t(x, wr, stride=st, padding=pad, output_padding=opad, groups=G, dilation=dil)

        def d_bwd_data():
            with torch.no_grad():
                return conv_t(x, w, stride=st, padding=pad, output_padding=opad, groups=G, dilation=dil)

        self.default = {
            "bwd_data": d_bwd_data,
            "fwd": lambda: torch.autograd.grad(y_x, [xr], dy, retain_graph=True)[0],
            "bwd_weights": lambda: torch.autograd.grad(y_w, [wr], dy, retain_graph=True)[0],
        }

        # torch oneDNN: the same maths as ordinary-convolution ops.
        cb = torch.ops.aten.convolution_backward
        i_side = torch.empty(dy.shape)
        zeros = [0] * D

        def o_bwd_data():
            return cb(x, i_side, w, None, st, pad, dil, False, zeros, G, [True, False, False])[0]

        def o_fwd():
            with torch.no_grad():
                return conv(dy, w, stride=st, padding=pad, dilation=dil, groups=G)

        def o_bwd_weights():
            return cb(x, dy, w, None, st, pad, dil, False, zeros, G, [False, True, False])[1]

        self.onednn = {"bwd_data": o_bwd_data, "fwd": o_fwd, "bwd_weights": o_bwd_weights}

        select = getattr(torch._C, "_select_conv_backend", None)
        if select is not None:
            backend = str(select(i_side, w, None, st, pad, dil, False, zeros, G))
            if "Mkldnn" not in backend:
                self.onednn_skip = "torch %s sends this convolution to %s, not oneDNN" % (
                    torch.__version__, backend.split(".")[-1])
                return
        # The oneDNN path must compute the same thing (untimed).
        with torch.no_grad():
            for op in OPS:
                ref, got = self.default[op](), self.onednn[op]()
                if got.shape != ref.shape:
                    self.onednn_skip = "oneDNN %s has shape %s, expected %s" % (op, list(got.shape), list(ref.shape))
                    return
                e = rel_err(got, ref)
                if not e <= 1e-3:
                    self.onednn_skip = "oneDNN %s differs from the default path by %.2g (relative)" % (op, e)
                    return

    def time(self, which, min_time):
        fns = self.default if which == "default" else self.onednn
        return {op: time_ms(fns[op], min_time) for op in OPS}


def run_tapegrad(a, name, threads):
    cmd = [a.exe, "bench", "--shapes", a.shapes, "--only", name, "--threads", str(threads), "--json",
           "--min-time", str(a.min_time)]
    if a.batch:
        cmd += ["--batch", str(a.batch)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("tapegrad failed (%s): %s" % (" ".join(cmd), r.stderr.strip()))
    rows = {}
    for line in r.stdout.splitlines():
        row = json.loads(line)
        rows[row["op"]] = row
    missing = [op for op in OPS if op not in rows]
    if missing:
        sys.exit("tapegrad bench printed no row for %s of %s" % (", ".join(missing), name))
    return rows


def with_grads(times):
    """Adds grads = fwd + bwd_weights to one round's {op: ms}."""
    t = dict(times)
    t["grads"] = t["fwd"] + t["bwd_weights"]
    return t


def med(rounds, key):
    return statistics.median(r[key] for r in rounds) if rounds else None


def fmt_ms(ms):
    if ms is None:
        return "-"
    return "%.4f" % ms if ms < 0.1 else "%.3f" % ms if ms < 10 else "%.1f" % ms


def fmt_ratio(r):
    return "-" if r is None else "%.2f" % r


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def print_table(thr, results, exclude):
    print("\n== %d thread%s: ms (GFLOP/s); x = torch ms / tapegrad ms (> 1: tapegrad faster)" % (thr, "" if thr == 1 else "s"))
    head = ("%-16s %8s | %-20s %9s %6s %9s %6s | %-20s %9s %6s %9s %6s | %9s"
            % ("shape", "MFLOP", "tg bwd_data", "torch", "x", "oneDNN", "x", "tg grads", "torch", "x", "oneDNN", "x",
               "MiB d/g"))
    print(head)
    print("-" * len(head))
    for r in results:
        cells = []
        for key, mult in (("bwd_data", 1), ("grads", 2)):
            tg = r["tapegrad"][key]
            cells.append("%-20s" % ("%s (%.0f)" % (fmt_ms(tg), mult * r["mflop"] / tg if tg > 0 else 0)))
            for col in ("torch_default", "torch_onednn"):
                t = r[col][key] if r[col] else None
                cells.append("%9s %6s" % (fmt_ms(t), fmt_ratio(t / tg if t else None)))
        mib = "%.1f/%.1f" % (r["extra_bytes"]["bwd_data"] / 2 ** 20, r["extra_bytes"]["grads"] / 2 ** 20)
        mf = "%.1f" % r["mflop"] if r["mflop"] >= 1 else "%.4f" % r["mflop"]
        print("%-16s %8s | %s %s %s | %s %s %s | %9s" % ((r["shape"], mf) + tuple(cells) + (mib,)))
    for r in results:
        if r["torch_skipped"]:
            print("  %s: no torch columns: %s" % (r["shape"], r["torch_skipped"]))
        elif r["onednn_skipped"]:
            print("  %s: no oneDNN column: %s" % (r["shape"], r["onednn_skipped"]))

    print("geometric means of x (worst shape):")
    for key in ("bwd_data", "grads"):
        for col, label in (("torch_default", "torch default"), ("torch_onednn", "torch oneDNN")):
            ratios = [(r["shape"], r[col][key] / r["tapegrad"][key]) for r in results if r[col]]
            gemm = [x for n, x in ratios if n not in exclude]
            if not ratios:
                continue
            worst = min(ratios, key=lambda p: p[1])
            g_all, g_gemm = geomean([x for _, x in ratios]), geomean(gemm)
            print("  %-8s vs %-13s  all %2d shapes: %5s   GEMM-bound %2d: %5s   worst: %s %.2f" % (
                key, label, len(ratios), fmt_ratio(g_all), len(gemm), fmt_ratio(g_gemm), worst[0], worst[1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default="build/release/tapegrad", help="the tapegrad binary")
    ap.add_argument("--shapes", default="bench/shapes.json")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default=None, help="only this shape")
    ap.add_argument("--batch", type=int, default=None, help="override every shape's N")
    ap.add_argument("--min-time", type=float, default=0.3, help="seconds per timed op (tapegrad and torch)")
    ap.add_argument("--exclude-from-gemm", default="depthwise_c128,tiny",
                    help="shapes left out of the GEMM-bound geometric means (comma-separated)")
    ap.add_argument("--json", default=None, metavar="OUT", help="write all medians to OUT")
    a = ap.parse_args()
    if a.rounds < 1 or any(t < 1 for t in a.threads) or (a.batch is not None and a.batch < 1):
        ap.error("--rounds, --threads and --batch must be >= 1")
    with open(a.shapes) as f:
        shapes = json.load(f)["shapes"]
    if a.only:
        shapes = [s for s in shapes if s["name"] == a.only]
        if not shapes:
            ap.error("--only %s names no shape of %s" % (a.only, a.shapes))
    exclude = set(x for x in a.exclude_from_gemm.split(",") if x)

    print("torch %s, %s" % (torch.__version__, torch.backends.mkldnn.is_available() and "mkldnn available" or "no mkldnn"))
    speed_before = sgemm_gflops()
    print("machine speed check before: torch.mm 1024^3 at 1 thread: %.1f GFLOP/s" % speed_before, flush=True)
    torch.manual_seed(0)
    out = []
    for thr in a.threads:
        set_threads(thr)
        results = []
        for s in shapes:
            name = s["name"]
            batch = a.batch or s["N"]
            ts = TorchShape(s, batch)
            ours, tdef, tone = [], [], []
            for _ in range(a.rounds):
                # A pause before each contender: torch's BLAS threads (OpenBLAS's pthreads
                # pool) keep spinning for about a tenth of a second after a GEMM and would
                # take a core from whatever runs next (measured: tapegrad's first op at 2
                # threads, grouped_g8 bwd_data, 5.6-6.1 ms right after torch, 4.3 alone).
                time.sleep(PAUSE_S)
                ours.append(run_tapegrad(a, name, thr))
                time.sleep(PAUSE_S)
                if ts.skip is None:
                    tdef.append(with_grads(ts.time("default", a.min_time)))
                    if ts.onednn_skip is None:
                        tone.append(with_grads(ts.time("onednn", a.min_time)))
            tg_rounds = [with_grads({op: o[op]["median_ms"] for op in OPS}) for o in ours]
            keys = OPS + ("grads",)
            extra = {op: max(o[op]["extra_bytes"] for o in ours) for op in OPS}
            extra["grads"] = max(extra["fwd"], extra["bwd_weights"])
            r = {
                "threads": thr,
                "tapegrad_threads": ours[0]["bwd_data"]["threads"],
                "shape": name,
                "batch": batch,
                "mflop": mflop(s, batch),
                "rounds": a.rounds,
                "tapegrad": {k: med(tg_rounds, k) for k in keys},
                "extra_bytes": extra,
                "torch_default": {k: med(tdef, k) for k in keys} if tdef else None,
                "torch_onednn": {k: med(tone, k) for k in keys} if tone else None,
                "torch_skipped": ts.skip,
                "onednn_skipped": ts.onednn_skip if ts.skip is None else ts.skip,
            }
            results.append(r)
            print("  done: %s, %d thread%s" % (name, thr, "" if thr == 1 else "s"), file=sys.stderr, flush=True)
        print_table(thr, results, exclude)
        out += results
    speed_after = sgemm_gflops()
    print("\nmachine speed check: torch.mm 1024^3 at 1 thread: %.1f GFLOP/s before, %.1f after%s" % (
        speed_before, speed_after,
        "  <-- changed by more than 10%: the machine was throttled or busy" if abs(speed_after / speed_before - 1) > 0.1 else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"torch": torch.__version__, "shapes": a.shapes, "min_time": a.min_time,
                       "sgemm_gflops_before": speed_before, "sgemm_gflops_after": speed_after,
                       "exclude_from_gemm": sorted(exclude), "results": out}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
