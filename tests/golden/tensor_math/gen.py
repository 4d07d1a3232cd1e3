#!/usr/bin/python3
"""Writes the PyTorch 1.13 goldens of tests/test_tensor_math.cpp (eager element-wise math).

    /usr/bin/python3 tests/golden/tensor_math/gen.py     # regenerates every .npy here (fixed seed)

Inputs: u.npy (f32: a sweep of [-5, 5] plus NaN, ±Inf, ±0, a subnormal and exp's edges),
a.npy [3, 1, 4] and b.npy [2, 4] (f32 normals, a holding a NaN and b an Inf), ia.npy [3, 1, 4]
(i32), ib.npy [2, 4] (i64, no zero), mask.npy [3, 2, 1] and mask1.npy [1, 1, 4] (bool). Every
other NAME.npy is the result of the torch expression the C++ test repeats next to its name,
stored in the result's own dtype (bool as |b1). torch is needed here only.
"""
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(20261125)


def save(name, t):
    np.save(os.path.join(HERE, f"{name}.npy"), t.detach().numpy())


special = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-40, 88.7, 89.0, -103.0, -104.0, 100.0, -100.0, 0.5, -0.5, 0.75]
u = torch.cat([torch.linspace(-5, 5, 57), torch.tensor(special)]).float()
a = torch.randn(3, 1, 4)
a[1, 0, 2] = float("nan")
b = torch.randn(2, 4)
b[0, 1] = float("inf")
ia = torch.randint(-10, 11, (3, 1, 4), dtype=torch.int32)
ib = torch.randint(1, 6, (2, 4), dtype=torch.int64) * (torch.randint(0, 2, (2, 4)) * 2 - 1)
mask = torch.rand(3, 2, 1) > 0.5
mask1 = torch.tensor([True, False, True, False]).reshape(1, 1, 4)
for n, t in dict(u=u, a=a, b=b, ia=ia, ib=ib, mask=mask, mask1=mask1).items():
    save(n, t)

unary = dict(abs=torch.abs, neg=torch.neg, exp=torch.exp, log=torch.log, sqrt=torch.sqrt, rsqrt=torch.rsqrt,
             sin=torch.sin, cos=torch.cos, tanh=torch.tanh, sigmoid=torch.sigmoid, relu=torch.relu)
for n, f in unary.items():
    save(f"u_{n}", f(u))
save("u_pow2", torch.pow(u, 2.0))
save("u_pow2_5", torch.pow(u, 2.5))
save("u_clamp", torch.clamp(u, -0.5, 0.75))

save("add_ab", a + b)
save("sub_ab", a - b)
save("mul_ab", a * b)
save("div_ab", a / b)
save("pow_ab", torch.pow(a.abs(), b))
save("add_as", a + 2.5)
save("rsub_as", 2.5 - a)
save("rdiv_as", 2.5 / a)
save("mul_as", a * -3.0)
save("div_as", a / 3.0)

save("add_iab", ia + ib)
save("sub_iab", ia - ib)
save("mul_iab", ia * ib)
save("div_iab", ia / ib)
save("mul_ia2", ia * 2)
save("mul_ia2_5", ia * 2.5)
save("add_ia_b", ia + b)
save("abs_ia", torch.abs(ia))
save("neg_ib", torch.neg(ib))
save("exp_ia", torch.exp(ia))

for n in ["eq", "ne", "lt", "le", "gt", "ge"]:
    save(f"{n}_ab", getattr(torch, n)(a, b))
    save(f"{n}_as", getattr(torch, n)(a, 0.5))
save("eq_ia_b", torch.eq(ia, ib))
save("where", torch.where(mask, a, b))
save("masked_fill", a.masked_fill(mask1, -7.0))
save("logical_and", torch.logical_and(mask, a > 0))
save("logical_or", torch.logical_or(mask, a))
save("logical_not", torch.logical_not(a))
