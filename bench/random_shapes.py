#!/usr/bin/env python3
"""Writes a shapes file (the format of bench/shapes.json) of random transposed-convolution
layers, to check the benchmark's targets on layers it was not tuned on:

    python3 bench/random_shapes.py SEED COUNT OUT.json
    /usr/bin/python3 bench/compare_torch.py --exe build/release/tapegrad --shapes OUT.json

Each layer: 1-3 spatial axes (2-D most often), groups 1, 2 or 4, 8-256 input and 3-256
output channels per group, kernel 1-5, stride 1-3, dilation 2 sometimes at stride 1, pads
up to about half the kernel's extent, output padding sometimes, a batch of 1-16, and between
2e7 and 1.5e9 multiply-adds (large enough to time, small enough for a few seconds each)."""
import json
import random
import sys


def layer(rng, i):
    dims = rng.choice([1, 2, 2, 2, 2, 3])
    while True:
        k = rng.choice([1, 2, 3, 3, 4, 4, 5])
        s = rng.choice([1, 2, 2, 2, 3]) if k > 1 else rng.choice([1, 2])
        d = rng.choice([1, 1, 1, 2]) if s == 1 else 1
        eff = d * (k - 1) + 1
        p = min(rng.randint(0, (eff - 1) // 2 + (1 if s > 1 else 0)), eff - 1)
        op = rng.randint(0, s - 1) if s > 1 and rng.random() < 0.3 else 0
        G = rng.choice([1, 1, 1, 1, 2, 4])
        cin = G * rng.choice([8, 16, 32, 48, 64, 96, 128, 192, 256])
        cout = G * rng.choice([3, 8, 16, 32, 64, 96, 128, 256]) if rng.random() > 0.1 else G * rng.choice([16, 32])
        if dims == 1:
            X = [rng.choice([64, 128, 256, 512, 1000])]
        elif dims == 2:
            X = [rng.choice([4, 7, 8, 14, 16, 28, 32, 64])] * 2
        else:
            X = [rng.choice([4, 6, 8, 12])] * 3
        N = rng.choice([1, 2, 4, 8, 16])
        if min(s * (x - 1) + eff - 2 * p + op for x in X) < 1:
            continue
        macs = N * cin * (cout // G) * k ** dims
        for x in X:
            macs *= x
        if 2e7 < macs < 1.5e9:
            return {"name": f"r{i}_{dims}d_c{cin}-{cout}_g{G}_k{k}s{s}d{d}p{p}op{op}_x{X[0]}_n{N}", "dims": dims, "N": N,
                    "C_in": cin, "C_out": cout, "groups": G, "input": X, "kernel": [k] * dims, "strides": [s] * dims,
                    "pads_begin": [p] * dims, "pads_end": [p] * dims, "dilations": [d] * dims,
                    "output_padding": [op] * dims, "layout": "NCX"}


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: random_shapes.py SEED COUNT OUT.json")
    seed, count, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rng = random.Random(seed)
    shapes = [layer(rng, i) for i in range(count)]
    with open(out, "w") as f:
        json.dump({"comment": f"random layers, bench/random_shapes.py {seed} {count}", "shapes": shapes}, f, indent=1)
    for s in shapes:
        print(s["name"])


if __name__ == "__main__":
    main()
