#!/usr/bin/python3
"""Writes the PyTorch 1.13 goldens of tests/test_tensor_index.cpp (reductions, indexing and
their gradients), float64.

    /usr/bin/python3 tests/golden/tensor_index/gen.py     # regenerates every .npy here (fixed seed)

Inputs: x.npy [3, 4, 5] (normals), t.npy [2, 5] (ties and a NaN, for max/min/argmax), p.npy
[3, 4] (positive, no zero, for prod), z.npy [2, 3] (one zero in row 0, two in row 1: prod's
gradient), idx.npy (i64 [3]: index_select on axis 1), gidx.npy (i64 [3, 2, 5]: gather and
scatter_add on axis 1), gy_*.npy the upstream gradients. Every other NAME.npy is the value
(NAME.npy) or the input's gradient (NAME.dx.npy) of the torch expression the C++ test
repeats next to its name. torch is needed here only.
"""
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(20261125)
D = torch.float64


def save(name, t):
    np.save(os.path.join(HERE, f"{name}.npy"), t.detach().numpy())


x = torch.randn(3, 4, 5, dtype=D)
t = torch.tensor([[1.0, 3.0, 3.0, -2.0, 0.5], [2.0, float("nan"), 7.0, float("nan"), -1.0]], dtype=D)
p = torch.rand(3, 4, dtype=D) + 0.5
z = torch.tensor([[2.0, 0.0, 3.0], [0.0, 4.0, 0.0]], dtype=D)
idx = torch.tensor([3, 0, 3])
gidx = torch.randint(0, 4, (3, 2, 5))
for n, v in dict(x=x, t=t, p=p, z=z, idx=idx, gidx=gidx).items():
    save(n, v)


def with_grad(name, inp, f):
    a = inp.clone().requires_grad_(True)
    y = f(a)
    gy = torch.randn_like(y)
    save(name, y)
    save(f"gy_{name}", gy)
    (g,) = torch.autograd.grad(y, a, gy)
    save(f"{name}.dx", g)


with_grad("sum_1", x, lambda a: a.sum(1))
with_grad("sum_02k", x, lambda a: a.sum((0, 2), keepdim=True))
with_grad("mean_m1", x, lambda a: a.mean(-1))
with_grad("prod_1", p, lambda a: a.prod(1))
with_grad("prod_z", z, lambda a: a.prod(1))
with_grad("var_1", x, lambda a: a.var(1))
with_grad("var_12_pop", x, lambda a: a.var((1, 2), unbiased=False))
with_grad("std_2", x, lambda a: a.std(2))
with_grad("std_all_pop", x, lambda a: a.std(unbiased=False))
with_grad("lse_1", x, lambda a: torch.logsumexp(a, 1))
with_grad("lse_02", x, lambda a: torch.logsumexp(a, (0, 2)))
with_grad("max_1", x, lambda a: a.max(1).values)
with_grad("min_2k", x, lambda a: a.min(2, keepdim=True).values)
with_grad("index_select_1", x, lambda a: a.index_select(1, idx))
with_grad("gather_1", x, lambda a: a.gather(1, gidx))
with_grad("scatter_add_1", x, lambda a: torch.zeros(3, 4, 5, dtype=D).scatter_add(1, gidx, a[:, :2, :]))
save("max_1.idx", x.max(1).indices)
save("min_2k.idx", x.min(2, keepdim=True).indices)
save("t_max1", t.max(1).values)
save("t_max1.idx", t.max(1).indices)
save("t_min1.idx", t.min(1).indices)
save("t_argmax0", t.argmax(0))

# batched matmul: [2, 1, 3, 4] · [3, 4, 2] (leading dims broadcast) and both gradients
ma = torch.randn(2, 1, 3, 4, dtype=D, requires_grad=True)
mb = torch.randn(3, 4, 2, dtype=D, requires_grad=True)
my = torch.matmul(ma, mb)
mgy = torch.randn_like(my)
da, db = torch.autograd.grad(my, (ma, mb), mgy)
for n, v in dict(bmm_a=ma, bmm_b=mb, bmm_y=my, bmm_gy=mgy, bmm_da=da, bmm_db=db).items():
    save(n, v)
