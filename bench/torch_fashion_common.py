"""What the PyTorch twins of the Fashion-MNIST examples share (bench/torch_fashion_*.py):
the IDX reader, the command line (a subset of the examples': --data --epochs --limit
--batch --threads --seed) and the training loop, printing the examples' per-epoch line
("epoch 1/3  test_loss ...  (train 41.2 s, 1456 img/s; test 2.1 s; total 43.3 s)").
For comparison only: torch is never a dependency of tapegrad's build or tests.
Run with Debian's /usr/bin/python3 (python3-torch)."""
import argparse
import gzip
import struct
import time

import numpy as np
import torch

DATA = "/usr/share/datasets/fashion-mnist"  # the examples' --data default


def read_idx(path):
    """An IDX file (gzip-compressed) as a numpy array of its dtype (uint8 here)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * ndim, raw[4 : 4 + 4 * ndim])
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def images(data, name):
    """[N, 1, 28, 28] float32 in [0, 1], as tapegrad's read_idx_images."""
    x = read_idx(f"{data}/{name}-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    return torch.from_numpy(x).unsqueeze(1)


def labels(data, name):
    return torch.from_numpy(read_idx(f"{data}/{name}-labels-idx1-ubyte.gz").astype(np.int64))


def parse(description, epochs, batch):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--data", default=DATA)
    p.add_argument("--epochs", type=int, default=epochs)
    p.add_argument("--limit", type=int, default=0, help="train on the first N images only (0: all)")
    p.add_argument("--batch", type=int, default=batch)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    return a


def fit(a, model, opt, train_x, train_y, loss_of, evaluate, scheduler=None):
    """Trains for a.epochs (a fresh shuffle per epoch, the last partial batch kept; the
    scheduler, if any, stepped after each epoch), evaluating after each (evaluate() ->
    (loss, text, metric), run in eval mode without gradients); returns the last evaluation."""
    if a.limit:
        train_x, train_y = train_x[: a.limit], (train_y[: a.limit] if train_y is not None else None)
    n = train_x.shape[0]
    t0 = time.perf_counter()
    last = None
    for epoch in range(1, a.epochs + 1):
        model.train()
        ts = time.perf_counter()
        order = torch.randperm(n)
        for s in range(0, n, a.batch):
            idx = order[s : s + a.batch]
            loss = loss_of(train_x[idx], train_y[idx] if train_y is not None else None)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if scheduler is not None:
            scheduler.step()  # once per epoch
        train_s = time.perf_counter() - ts
        te = time.perf_counter()
        model.eval()
        with torch.no_grad():
            last = evaluate()
        print(f"epoch {epoch}/{a.epochs}  {last[1]}  (train {train_s:.1f} s, {n / train_s:.0f} img/s; "
              f"test {time.perf_counter() - te:.1f} s; total {time.perf_counter() - t0:.1f} s)", flush=True)
    return last
