#!/usr/bin/python3
"""Writes the PyTorch goldens of tests/test_layers_golden.cpp (pooling and batch norm).

    /usr/bin/python3 tests/golden/layers/gen_layers.py     # regenerates every .npy here (fixed seed)

For each case NAME it writes NAME.x.npy (the input), NAME.gy.npy (a random cotangent of the
output), NAME.y.npy (the forward value) and NAME.dx.npy (the gradient of <y, gy> with respect
to x), all float64, from torch.nn.functional with its defaults (floor mode, max-pool padding
-inf, average pooling with count_include_pad=True). Batch-norm cases add NAME.w/.b (the affine
parameters), NAME.dw/.db, NAME.running_mean/.running_var after one training step from the
initial (0, 1) statistics with momentum 0.1 and eps 1e-5, and NAME.eval_y, the evaluation-mode
output on the same x with those updated statistics. The settings of each case are repeated in
the C++ test. torch is needed here only; the test reads the committed files.
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(20240611)


def save(name, **tensors):
    for key, t in tensors.items():
        np.save(os.path.join(HERE, f"{name}.{key}.npy"), t.detach().numpy().astype(np.float64))


def pool_case(name, fn, shape, **kw):
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    y = fn(x, **kw)
    gy = torch.randn(*y.shape, dtype=torch.float64)
    (dx,) = torch.autograd.grad(y, x, gy)
    save(name, x=x, gy=gy, y=y, dx=dx)


# (kernel, stride, padding, dilation) are repeated in tests/test_layers_golden.cpp
pool_case("max1d", F.max_pool1d, (2, 3, 11), kernel_size=3, stride=2, padding=1, dilation=2)
pool_case("max2d", F.max_pool2d, (2, 3, 7, 6), kernel_size=3, stride=2, padding=1)
pool_case("max2d_default", F.max_pool2d, (1, 2, 8, 8), kernel_size=2)
pool_case("max3d", F.max_pool3d, (1, 2, 4, 5, 5), kernel_size=(2, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))
pool_case("avg1d", F.avg_pool1d, (2, 3, 10), kernel_size=4, stride=3, padding=2)
pool_case("avg2d", F.avg_pool2d, (2, 3, 7, 6), kernel_size=3, stride=2, padding=1)
pool_case("avg3d", F.avg_pool3d, (1, 2, 4, 5, 5), kernel_size=(2, 3, 3), stride=(1, 2, 2), padding=(1, 1, 1))


def bn_case(name, shape):
    C = shape[1]
    x = torch.randn(*shape, dtype=torch.float64) * 2 + 0.5
    x.requires_grad_(True)
    w = (torch.rand(C, dtype=torch.float64) + 0.5).requires_grad_(True)
    b = torch.randn(C, dtype=torch.float64).requires_grad_(True)
    rm = torch.zeros(C, dtype=torch.float64)
    rv = torch.ones(C, dtype=torch.float64)
    y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)
    gy = torch.randn(*y.shape, dtype=torch.float64)
    dx, dw, db = torch.autograd.grad(y, (x, w, b), gy)
    with torch.no_grad():
        eval_y = F.batch_norm(x, rm, rv, w, b, training=False, momentum=0.1, eps=1e-5)
    save(name, x=x, w=w, b=b, gy=gy, y=y, dx=dx, dw=dw, db=db, running_mean=rm, running_var=rv, eval_y=eval_y)


bn_case("bn0d", (8, 4))
bn_case("bn1d", (4, 3, 6))
bn_case("bn2d", (3, 4, 5, 5))
bn_case("bn3d", (2, 3, 3, 4, 4))


# ---- layers and optimizers of the everyday API (their own generator, so the cases above keep
# their draws): LayerNorm, GELU (both forms), Embedding (padding_idx), AdamW, ReduceLROnPlateau.
g2 = torch.Generator().manual_seed(20261125)


def rnd(*shape):
    return torch.randn(*shape, dtype=torch.float64, generator=g2)


x = rnd(2, 3, 4).requires_grad_(True)
w = (rnd(3, 4) * 0.5 + 1).requires_grad_(True)
b = rnd(3, 4).requires_grad_(True)
y = F.layer_norm(x, (3, 4), w, b, eps=1e-5)
gy = rnd(*y.shape)
dx, dw, db = torch.autograd.grad(y, (x, w, b), gy)
save("layernorm", x=x, w=w, b=b, y=y, gy=gy, dx=dx, dw=dw, db=db)

for form in ("none", "tanh"):
    x = (rnd(5, 7) * 2).requires_grad_(True)
    y = F.gelu(x, approximate=form)
    gy = rnd(*y.shape)
    (dx,) = torch.autograd.grad(y, x, gy)
    save(f"gelu_{form}", x=x, y=y, gy=gy, dx=dx)

emb = torch.nn.Embedding(6, 3, padding_idx=2).double()
with torch.no_grad():
    emb.weight.copy_(rnd(6, 3))
idx = torch.tensor([[0, 2, 5], [2, 1, 0]])
y = emb(idx)
gy = rnd(*y.shape)
(dw,) = torch.autograd.grad(y, emb.weight, gy)
save("embedding", w=emb.weight, idx=idx.double(), y=y, gy=gy, dw=dw)

p = torch.nn.Parameter(rnd(4, 3))
p0 = p.detach().clone()
opt = torch.optim.AdamW([p], lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)
grads = torch.stack([rnd(4, 3) for _ in range(3)])
for k in range(3):
    opt.zero_grad()
    p.grad = grads[k].clone()
    opt.step()
save("adamw", p0=p0, grads=grads, p3=p.detach())

# ReduceLROnPlateau: the rate after each of 12 metric values, in mode min (rel) and max (abs).
metrics = torch.tensor([1.0, 0.9, 0.95, 0.95, 0.95, 0.89, 0.9, 0.9, 0.9, 0.9, 0.5, 0.6], dtype=torch.float64)
for name, kw in (("plateau_min", dict(mode="min", factor=0.5, patience=2, threshold=0.01, cooldown=1)),
                 ("plateau_max", dict(mode="max", factor=0.1, patience=1, threshold=0.05, threshold_mode="abs", min_lr=0.002))):
    q = torch.nn.Parameter(torch.zeros(1))
    o = torch.optim.SGD([q], lr=0.1)
    s = torch.optim.lr_scheduler.ReduceLROnPlateau(o, **kw)
    lrs = []
    for m in metrics:
        s.step(float(m))
        lrs.append(o.param_groups[0]["lr"])
    save(name, metrics=metrics, lrs=torch.tensor(lrs, dtype=torch.float64))
