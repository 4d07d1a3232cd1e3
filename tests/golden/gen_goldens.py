#!/usr/bin/python3
"""Writes the golden case folders of tests/golden/cases/ from the PyTorch oracle of OPS.md section 8.

    /usr/bin/python3 tests/golden/gen_goldens.py      # regenerates every folder (fixed seed)

Each folder has the layout of /work/shared/conformance/onnx/*: case.json, the input .npy files,
and expected/<output>.npy plus expected/tol.json, or expected/error.json for a case that must
be refused. tests/test_golden_cases.cpp runs them through `tapegrad run`, so the test command
never needs Python or torch.

The oracle is independent of the library: padding and output sizes are resolved here from
OPS.md section 4 in plain integer arithmetic, and the values come from torch's conv and
conv_transpose in float64, with F.pad for forward ops and the full-then-crop recipe for
transposed ops (never torch's padding or output_padding arguments). Gradients are torch
autograd through the same recipe, so the permutes and reshapes route them back to each op's
own layouts. The worked examples of OPS.md section 10 are asserted against the oracle.

Tolerance per output file, |a - e| <= atol + rtol*|e|: atol = 2*eps_acc*R*M, where R is the
largest number of products summed into one element and M the largest sum of their absolute
values (found by running the oracle on all-ones and on absolute-valued inputs). Any summation
order passes; an indexing mistake is off by O(M). f16/bf16 inputs are rounded to the compute
dtype first; accumulation is f32 (eps_acc = eps_f32) and the final rounding adds
rtol = 2*eps_dtype and 2*eps_dtype*M to atol.
"""
import io
import json
import os
import shutil
import struct

import numpy as np
import torch
import torch.nn.functional as Fn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cases")
SEED = 20240611
N_RANDOM = 150
MAX_ELEMS = 5000

EPS = {"f64": 2.0 ** -52, "f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}
RTOL = {"f64": 1e-12, "f32": 1e-5, "f16": 2 * EPS["f16"], "bf16": 2 * EPS["bf16"]}


class Invalid(Exception):
    """A configuration the spec refuses (used to filter random draws)."""


# ------------------------------------------------------------------------------------------------
# The ops. a = data-input channels per group, b = result channels per group, G = groups.
# Per format: the stored filter shape and the torch-weight column of OPS.md section 6.
# ------------------------------------------------------------------------------------------------

def _xfirst(D):  # [K..., B, A] -> [A, B, K...]
    return [D + 1, D] + list(range(D))


def _old_xio(D):  # [K..., IC, OC/g] -> [IC, OC/g, K...]
    return [D, D + 1] + list(range(D))


def _ident(F, D):
    return F


def _merge_g(F, D):  # [G, A, B, K...] -> [G*A, B, K...]
    return F.reshape([F.shape[0] * F.shape[1], F.shape[2]] + list(F.shape[3:]))


class Op:
    def __init__(self, opset, name, comp, rule, formats, fmt_attr, attrs):
        self.opset, self.name, self.comp, self.rule = opset, name, comp, rule
        self.formats = formats  # {fmt: (shape(G, a, b, K), to_torch(F, D))}; first = default
        self.default_fmt = next(iter(formats))
        self.fmt_attr = fmt_attr
        self.attrs = attrs

    @property
    def onednn(self):
        return self.opset == "onednn"


_CONV_AT = ["strides", "pads_begin", "pads_end", "dilations", "auto_pad"]
_BP_AT = _CONV_AT + ["output_padding"]
OPS = {
    "ov_conv": Op("openvino", "Convolution", "conv", "F",
                  {None: (lambda G, a, b, K: [b, a] + K, _ident)}, None, _CONV_AT),
    "ov_gconv": Op("openvino", "GroupConvolution", "conv", "F",
                   {None: (lambda G, a, b, K: [G, b, a] + K, _merge_g)}, None, _CONV_AT),
    "ov_cbd": Op("openvino", "ConvolutionBackpropData", "convt", "T_OV",
                 {None: (lambda G, a, b, K: [a, b] + K, _ident)}, None, _BP_AT),
    "ov_gcbd": Op("openvino", "GroupConvolutionBackpropData", "convt", "T_OV",
                  {None: (lambda G, a, b, K: [G, a, b] + K, _merge_g)}, None, _BP_AT),
    "dnn_conv": Op("onednn", "Convolution", "conv", "F",
                   {"XIO": (lambda G, a, b, K: K + [a, G * b], lambda F, D: F.permute(_xfirst(D))),
                    "OIX": (lambda G, a, b, K: [G * b, a] + K, _ident)},
                   "weights_format", _CONV_AT + ["groups", "data_format", "weights_format"]),
    "dnn_ct": Op("onednn", "ConvTranspose", "convt", "T_CT",
                 {"XOI": (lambda G, a, b, K: K + [b, G * a], lambda F, D: F.permute(_xfirst(D))),
                  "IOX": (lambda G, a, b, K: [G * a, b] + K, _ident)},
                 "weights_format", _BP_AT + ["groups", "data_format", "weights_format"]),
    "dnn_cbd": Op("onednn", "ConvolutionBackpropData", "convt", "T_CBD",
                  {"XIO": (lambda G, a, b, K: K + [b, G * a], lambda F, D: F.permute(_xfirst(D))),
                   "OIX": (lambda G, a, b, K: [G * a, b] + K, _ident)},
                  "filter_format", _BP_AT + ["groups", "data_format", "filter_format", "output_shape"]),
    "dnn_ctbpd": Op("onednn", "ConvTransposeBackpropData", "conv", "F",
                    {"XIO": (lambda G, a, b, K: K + [G * b, a], lambda F, D: F.permute(_old_xio(D))),
                     "OIX": (lambda G, a, b, K: [a, G * b] + K, lambda F, D: F.transpose(0, 1))},
                    "filter_format", _BP_AT + ["groups", "data_format", "filter_format"]),
    "dnn_ctbwd": Op("onednn", "ConvTransposeBackwardData", "conv", "F",
                    {"XOI": (lambda G, a, b, K: K + [a, G * b], lambda F, D: F.permute(_xfirst(D))),
                     "IOX": (lambda G, a, b, K: [G * b, a] + K, _ident)},
                    "weights_format", _BP_AT + ["groups", "data_format", "weights_format"]),
}


# ------------------------------------------------------------------------------------------------
# OPS.md section 4 in integer arithmetic: per axis (pb, pe or None, Y).
# ------------------------------------------------------------------------------------------------

def norm_autopad(ap):
    ap = "explicit" if ap is None else ap.lower()
    return "explicit" if ap in ("none", "notset") else ap


def cdiv(a, b):
    return -(-a // b)


def rule_f(X, K, s, d, ap, pb, pe):
    eff = d * (K - 1) + 1
    if ap == "valid":
        pb = pe = 0
    elif ap in ("same_upper", "same_lower"):
        T = max(0, (cdiv(X, s) - 1) * s + eff - X)
        pb = T // 2 if ap == "same_upper" else T - T // 2
        pe = T - pb
    if X + pb + pe < eff:
        raise Invalid("dilated kernel larger than the padded input")
    return pb, pe, (X + pb + pe - eff) // s + 1


def rule_t_ov(X, K, s, d, op, ap, pb, pe, Yreq):
    eff = d * (K - 1) + 1
    L = s * (X - 1) + eff
    if Yreq is None:
        if ap == "explicit":
            if L - pb - pe + op < 1:
                raise Invalid("Y < 1")
            return pb, L - pb - pe + op
        return 0, L + op
    T = max(0, L + op - Yreq)
    if ap == "same_upper":
        return T - T // 2, Yreq
    if ap == "same_lower":
        return T // 2, Yreq
    return (pb if ap == "explicit" else 0), Yreq


def rule_t_ct(X, K, s, d, op, ap, pb, pe):
    eff = d * (K - 1) + 1
    L = s * (X - 1) + eff
    if ap == "valid":
        pb = pe = 0
    elif ap in ("same_upper", "same_lower"):
        T = max(0, eff - s)
        pb = T // 2 if ap == "same_upper" else T - T // 2
        pe = T - pb
    if L - pb - pe + op < 1:
        raise Invalid("Y < 1")
    return pb, L - pb - pe + op


def rule_t_cbd(X, K, s, d, ap, pb, pe, Yo):
    pb, pe, Yf = rule_f(Yo, K, s, d, ap, pb, pe)
    if Yf != X:
        raise Invalid("output_shape does not map back to the diff_dst size")
    return pb, Yo


def resolve(c):
    op = OPS[c["op"]]
    ap = norm_autopad(c.get("auto_pad"))
    res = []
    for i in range(len(c["X"])):
        X, K, s, d = c["X"][i], c["K"][i], c["s"][i], c["d"][i]
        pb, pe, opad = c["pb"][i], c["pe"][i], c["opad"][i]
        if op.rule == "F":
            res.append(rule_f(X, K, s, d, ap, pb, pe))
        elif op.rule == "T_OV":
            Yreq = c["oshape"][i] if c.get("oshape") is not None else None
            p, Y = rule_t_ov(X, K, s, d, opad, ap, pb, pe, Yreq)
            res.append((p, None, Y))
        elif op.rule == "T_CT":
            p, Y = rule_t_ct(X, K, s, d, opad, ap, pb, pe)
            res.append((p, None, Y))
        else:
            p, Y = rule_t_cbd(X, K, s, d, ap, pb, pe, c["oshape"][i])
            res.append((p, None, Y))
    return res


def cbd_valid_yo(X, K, s, d, ap, pb, pe):
    """Every output_shape value that oneDNN ConvolutionBackpropData accepts on one axis."""
    out = []
    for Yo in range(1, s * X + d * (K - 1) + 2 + s):
        try:
            rule_t_cbd(X, K, s, d, norm_autopad(ap), pb, pe, Yo)
            out.append(Yo)
        except Invalid:
            pass
    return out


# ------------------------------------------------------------------------------------------------
# The oracle of OPS.md section 8.
# ------------------------------------------------------------------------------------------------

CONV = {1: Fn.conv1d, 2: Fn.conv2d, 3: Fn.conv3d}
CONVT = {1: Fn.conv_transpose1d, 2: Fn.conv_transpose2d, 3: Fn.conv_transpose3d}


def is_nxc(c):
    return OPS[c["op"]].onednn and (c.get("data_format") or "NXC").upper() == "NXC"


def oracle(c, res, x, F, b):
    """x, F, b: float64 torch tensors in the op's own layouts; returns y in the op's layout."""
    op = OPS[c["op"]]
    D = len(c["X"])
    if is_nxc(c):  # step 1
        x = x.permute([0, D + 1] + list(range(1, D + 1)))
    Wt = op.formats[c["fmt"]][1](F, D).contiguous()  # step 2
    # torch keeps strides in int32; a stride that only ever multiplies index 0 may be replaced
    s = c.get("oracle_s", c["s"])
    if op.comp == "conv":  # step 4
        pad = []
        for a in reversed(range(D)):
            pad += [res[a][0], res[a][1]]
        y = CONV[D](Fn.pad(x, pad), Wt, stride=s, dilation=c["d"], groups=c["G"])
    else:  # step 5
        full = CONVT[D](x, Wt, stride=s, dilation=c["d"], groups=c["G"])
        pad = []
        for a in reversed(range(D)):
            pad += [0, max(0, res[a][0] + res[a][2] - full.shape[2 + a])]
        full = Fn.pad(full, pad)
        y = full[(slice(None), slice(None)) + tuple(slice(r[0], r[0] + r[2]) for r in res)]
    if b is not None:  # step 6
        y = y + b.view([1, -1] + [1] * D)
    if is_nxc(c):
        y = y.permute([0] + list(range(2, D + 2)) + [1])
    return y


def run_oracle(c, res, arrs, dy=None):
    """arrs: role -> float64 ndarray ('data', 'filter', optional 'bias'); returns outputs by stem."""
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=dy is not None) for k, v in arrs.items()}
    y = oracle(c, res, t["data"], t["filter"], t.get("bias"))
    out = {"out": y.detach().numpy().copy()}
    if dy is not None:  # step 7
        y.backward(torch.tensor(dy, dtype=torch.float64))
        for k, v in t.items():
            out["d" + k] = v.grad.numpy().copy() if v.grad is not None else np.zeros_like(arrs[k])
    return out


def round_to(a, dt):
    """float64 values rounded to dtype dt (still float64)."""
    a = np.asarray(a, dtype=np.float64)
    if dt == "f64":
        return a
    if dt == "f32":
        return a.astype(np.float32).astype(np.float64)
    if dt == "f16":
        return a.astype(np.float16).astype(np.float64)
    return torch.from_numpy(a.copy()).to(torch.bfloat16).to(torch.float64).numpy()


def stored(a, dt):
    """The array written to disk for dtype dt (bf16 travels as <f4)."""
    return round_to(a, dt).astype({"f64": "<f8", "f32": "<f4", "f16": "<f2", "bf16": "<f4"}[dt])


def tolerance(dt, R, M):
    eps_acc = EPS["f32"] if dt in ("f16", "bf16") else EPS[dt]
    atol = 2.0 * eps_acc * R * M
    if dt in ("f16", "bf16"):
        atol += 2.0 * EPS[dt] * M
    return {"rtol": RTOL[dt], "atol": float(atol)}


# ------------------------------------------------------------------------------------------------
# Case folders.
# ------------------------------------------------------------------------------------------------

COUNTS = {}


def new_dir(name, category):
    d = os.path.join(OUT, name)
    assert not os.path.exists(d), name
    os.makedirs(os.path.join(d, "expected"))
    COUNTS[category] = COUNTS.get(category, 0) + 1
    return d


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)
        f.write("\n")


def data_shape(c):
    C = c["G"] * c["a"]
    return [c["N"]] + c["X"] + [C] if is_nxc(c) else [c["N"], C] + c["X"]


def result_shape(c, res):
    C, Y = c["G"] * c["b"], [r[2] for r in res]
    return [c["N"]] + Y + [C] if is_nxc(c) else [c["N"], C] + Y


def filter_shape(c):
    return OPS[c["op"]].formats[c["fmt"]][0](c["G"], c["a"], c["b"], list(c["K"]))


def attrs_of(c):
    op = OPS[c["op"]]
    omit = set(c.get("omit", ()))
    vals = {"strides": c["s"], "pads_begin": c["pb"], "pads_end": c["pe"], "dilations": c["d"],
            "output_padding": c["opad"]}
    if c.get("auto_pad") is not None:
        vals["auto_pad"] = c["auto_pad"]
    if op.onednn:
        vals["groups"] = c["G"]
        if c.get("data_format") is not None:
            vals["data_format"] = c["data_format"]
        vals[op.fmt_attr] = c.get("fmt_spelling", c["fmt"])
    if c.get("os_attr") is not None:
        vals["output_shape"] = c["os_attr"]
    return {k: vals[k] for k in op.attrs if k in vals and k not in omit}


def complete(c):
    """Fills the defaults of a config dict. Keys: op (a key of OPS), N, G, a, b (channels per group of
    the data input and of the result), per-axis lists X, K, s, d, pb, pe, opad (output_padding);
    auto_pad, data_format, fmt (None: omitted, so the default applies); oshape (the requested
    spatial output) with os_input / os_attr (the value written, full or spatial) and os_dtype;
    bias, dtype, in_dtype (of the files), grad, omit (attributes left out), fixed (given values),
    expect (numbers to assert), ok_or_error (a reason: refusal also accepted)."""
    c = dict(c)
    D = len(c["X"])
    for k, v in (("s", 1), ("d", 1), ("pb", 0), ("pe", 0), ("opad", 0)):
        c.setdefault(k, [v] * D)
    c.setdefault("N", 1)
    c.setdefault("G", 1)
    c.setdefault("fmt", OPS[c["op"]].default_fmt)
    c.setdefault("dtype", "f32")
    return c


def make_case(name, category, c, rng):
    """Runs the oracle on a success config and writes its folder."""
    c = complete(c)
    op = OPS[c["op"]]
    res = resolve(c)
    dt = c["dtype"]
    in_dt = c.get("in_dtype", dt)  # dtype of the input files (the library converts to dt)
    fixed = c.get("fixed", {})
    ds, fs, ys = data_shape(c), filter_shape(c), result_shape(c, res)
    for shp in (ds, fs, ys):
        assert int(np.prod(shp)) < MAX_ELEMS, (name, ds, fs, ys)
    arrs = {"data": round_to(fixed["data"] if "data" in fixed else rng.uniform(-1, 1, ds), dt).reshape(ds),
            "filter": round_to(fixed["filter"] if "filter" in fixed else rng.uniform(-1, 1, fs), dt).reshape(fs)}
    if c.get("bias"):
        arrs["bias"] = round_to(rng.uniform(-1, 1, [c["G"] * c["b"]]), dt)
    dy = None
    if c.get("grad"):
        dy = round_to(fixed["dy"] if "dy" in fixed else rng.uniform(-1, 1, ys), dt).reshape(ys)
    vals = run_oracle(c, res, arrs, dy)
    assert list(vals["out"].shape) == ys, (name, vals["out"].shape, ys)
    absv = run_oracle(c, res, {k: np.abs(v) for k, v in arrs.items()}, None if dy is None else np.abs(dy))
    ones = run_oracle(c, res, {k: np.ones_like(v) for k, v in arrs.items()}, None if dy is None else np.ones_like(dy))

    d = new_dir(name, category)
    inputs = ["data.npy", "filter.npy"]
    grad_inputs = ["ddata.npy", "dfilter.npy"]
    xs, fs_ = stored(arrs["data"], in_dt), stored(arrs["filter"], in_dt)
    if c.get("fortran_data"):
        xs = np.asfortranarray(xs)
    if c.get("big_endian_filter"):
        fs_ = fs_.astype(fs_.dtype.newbyteorder(">"))
    np.save(os.path.join(d, "data.npy"), xs)
    np.save(os.path.join(d, "filter.npy"), fs_)
    if c.get("os_input") is not None:
        inputs.append("output_shape.npy")
        grad_inputs.append(None)
        np.save(os.path.join(d, "output_shape.npy"), np.array(c["os_input"], dtype=c.get("os_dtype", "<i8")))
    if c.get("bias"):
        inputs.append("bias.npy")
        grad_inputs.append("dbias.npy")
        np.save(os.path.join(d, "bias.npy"), stored(arrs["bias"], in_dt))
    case = {"opset": op.opset, "op": op.name, "attrs": attrs_of(c), "inputs": inputs}
    if not c.get("dtype_omit") or in_dt != dt:
        case["dtype"] = dt
    case["output"] = "out.npy"
    outs = ["out"]
    if dy is not None:
        np.save(os.path.join(d, "dy.npy"), stored(dy, in_dt))
        case["grad_output"] = "dy.npy"
        case["grad_inputs"] = grad_inputs
        outs += [g[:-4] for g in grad_inputs if g]
    tol = {}
    for k in outs:
        np.save(os.path.join(d, "expected", k + ".npy"), stored(vals[k], dt))
        R = float(ones[k].max()) if ones[k].size else 0.0
        M = float(absv[k].max()) if absv[k].size else 0.0
        tol[k + ".npy"] = tolerance(dt, R, M)
    write_json(os.path.join(d, "case.json"), case)
    write_json(os.path.join(d, "expected", "tol.json"), tol)
    if c.get("ok_or_error"):  # outside the contract: a clean refusal or the right values
        write_json(os.path.join(d, "expected", "error.json"), {"expect": "ok_or_error", "why": c["ok_or_error"]})
    for k, want in (c.get("expect") or {}).items():  # the hand-computed numbers of OPS.md section 10
        got = vals[k].reshape(-1)
        assert got.shape == np.array(want).reshape(-1).shape and np.allclose(got, want, atol=1e-12), \
            (name, k, got.tolist(), want)
    return vals


def error_case(name, case, files, why, stderr_any, raw_case=None):
    """A case that must be refused: exit 1, one 'error:' line naming one of stderr_any, no file."""
    d = new_dir(name, "error")
    for fname, content in files.items():
        p = os.path.join(d, fname)
        if isinstance(content, (bytes, bytearray)):
            with open(p, "wb") as f:
                f.write(content)
        else:
            np.save(p, content)
    if raw_case is not None:
        with open(os.path.join(d, "case.json"), "w") as f:
            f.write(raw_case)
    else:
        write_json(os.path.join(d, "case.json"), case)
    write_json(os.path.join(d, "expected", "error.json"), {"expect": "error", "why": why, "stderr_any": stderr_any})


# ------------------------------------------------------------------------------------------------
# Random configurations.
# ------------------------------------------------------------------------------------------------

AUTO_PADS = [None, "explicit", "valid", "same_upper", "same_lower"]


def random_config(rng, op=None, D=None, groups=None, fmt="any", df="any", ap="any", dtype=None, grad=None,
                  bias=None, limit=1500, os_form=None):
    """A valid random config; fixed choices are honoured, the rest is drawn."""
    for _ in range(10000):
        k = op or rng.choice(list(OPS))
        o = OPS[k]
        nd = D or int(rng.choice([1, 2, 3], p=[0.3, 0.45, 0.25]))
        gk = groups or (rng.choice(["1", "2", "dw"]) if k not in ("ov_conv", "ov_cbd") else "1")
        c = {"op": k, "N": int(rng.choice([1, 1, 2, 2, 3])) if nd < 3 else int(rng.choice([1, 2]))}
        if gk == "1":
            c["G"], c["a"], c["b"] = 1, int(rng.integers(1, 4)), int(rng.integers(1, 4))
        elif gk == "dw":
            c["G"], c["a"], c["b"] = int(rng.integers(2, 5)), 1, int(rng.choice([1, 1, 2]))
            if o.comp == "convt":  # a depthwise transposed op: one data channel per group
                c["a"], c["b"] = 1, int(rng.choice([1, 1, 2]))
        else:
            c["G"], c["a"], c["b"] = int(gk) if gk.isdigit() else 2, int(rng.integers(1, 3)), int(rng.integers(1, 3))
        kmax = {1: 5, 2: 3, 3: 2}[nd]
        c["K"] = [int(rng.integers(1, kmax + 1)) for _ in range(nd)]
        c["s"] = [int(rng.choice([1, 1, 2, 2, 3])) for _ in range(nd)]
        c["d"] = [int(rng.choice([1, 1, 1, 2, 3] if nd == 1 else [1, 1, 2])) for _ in range(nd)]
        c["pb"] = [int(rng.integers(0, 3)) for _ in range(nd)]
        c["pe"] = [int(rng.integers(0, 3)) for _ in range(nd)]
        c["opad"] = [int(rng.choice([0, 0, 0, 1, 2, 3])) for _ in range(nd)]
        xmax = {1: 9, 2: 6, 3: 4}[nd] if o.comp == "conv" else {1: 6, 2: 4, 3: 3}[nd]
        c["X"] = [int(rng.integers(1, xmax + 1)) for _ in range(nd)]
        c["auto_pad"] = ap if ap != "any" else AUTO_PADS[int(rng.choice(5, p=[0.25, 0.2, 0.15, 0.2, 0.2]))]
        if o.onednn:
            c["data_format"] = df if df != "any" else rng.choice([None, "NCX", "NXC"])
            c["fmt"] = fmt if fmt != "any" else rng.choice(list(o.formats))
        else:
            c["fmt"] = None
        if o.rule == "T_OV" and rng.random() < 0.4:
            ap_n = norm_autopad(c["auto_pad"])
            ys = []
            for i in range(nd):
                eff = c["d"][i] * (c["K"][i] - 1) + 1
                L = c["s"][i] * (c["X"][i] - 1) + eff
                lo = max(1, L + c["opad"][i] - 4 - (c["pb"][i] if ap_n == "explicit" else 0))
                ys.append(int(rng.integers(lo, L + c["opad"][i] + 3)))
            c["oshape"] = ys
            c["os_input"] = ys
            c["os_dtype"] = rng.choice(["<i8", "<i4"])
        if o.rule == "T_CBD":
            ys = []
            for i in range(nd):
                cand = cbd_valid_yo(c["X"][i], c["K"][i], c["s"][i], c["d"][i], c["auto_pad"], c["pb"][i], c["pe"][i])
                if not cand:
                    break
                ys.append(int(rng.choice(cand)))
            if len(ys) != nd:
                continue
            c["oshape"] = ys
            form = os_form or rng.choice(["full-input", "spatial-input", "full-attr", "spatial-attr"])
            full = [c["N"]] + ys + [c["G"] * c["b"]] if is_nxc(c) else [c["N"], c["G"] * c["b"]] + ys
            val = full if form.startswith("full") else ys
            if form.endswith("input"):
                c["os_input"], c["os_dtype"] = val, rng.choice(["<i8", "<i4"])
            else:
                c["os_attr"] = val
        c["bias"] = bool(bias if bias is not None else (k in ("dnn_conv", "dnn_ct") and rng.random() < 0.4))
        c["dtype"] = dtype or rng.choice(["f32", "f64", "f16", "bf16"], p=[0.55, 0.3, 0.08, 0.07])
        c["grad"] = bool(grad if grad is not None else rng.random() < 0.4)
        omit = [a for a, v, dflt in (("strides", c["s"], 1), ("dilations", c["d"], 1), ("pads_begin", c["pb"], 0),
                                     ("pads_end", c["pe"], 0), ("output_padding", c["opad"], 0))
                if all(x == dflt for x in v) and rng.random() < 0.3]
        if o.onednn and rng.random() < 0.15 and c["fmt"] == o.default_fmt:
            omit.append(o.fmt_attr)
        c["omit"] = omit
        try:
            c = complete(c)
            res = resolve(c)
        except Invalid:
            continue
        sizes = [np.prod(data_shape(c)), np.prod(filter_shape(c)), np.prod(result_shape(c, res))]
        if max(sizes) >= limit or min(r[2] for r in res) < 1:
            continue
        # mostly computed values: a result that is mostly padding or zero tail tests little
        cnt = run_oracle(c, res, {"data": np.ones(data_shape(c)), "filter": np.ones(filter_shape(c))})["out"]
        if np.count_nonzero(cnt) < 0.6 * cnt.size:
            continue
        return c
    raise RuntimeError("no valid random config")


# ------------------------------------------------------------------------------------------------
# The suite.
# ------------------------------------------------------------------------------------------------

def fmt_tag(c):
    o = OPS[c["op"]]
    tag = c["op"]
    if o.onednn:
        tag += "_" + (c.get("data_format") or "dflt").lower() + "_" + c["fmt"].lower()
    return tag


def gen_coverage(rng):
    """Every op x weight format x data_format x rank, groups cycling through 1, 2, depthwise."""
    n = 0
    for k, o in OPS.items():
        fmts = list(o.formats)
        dfs = ["NCX", "NXC"] if o.onednn else [None]
        for f in fmts:
            for df in dfs:
                for D in (1, 2, 3):
                    gk = "1" if k in ("ov_conv", "ov_cbd") else ["1", "2", "dw"][n % 3]
                    n += 1
                    c = random_config(rng, op=k, D=D, groups=gk, fmt=f, df=df, dtype="f32", grad=False,
                                      bias=False, limit=800)
                    make_case("cov_%s_%dd_g%s" % (fmt_tag(c), D, gk), "coverage", c, rng)
    # bias for oneDNN Convolution and ConvTranspose, every format and layout
    for k in ("dnn_conv", "dnn_ct"):
        for f in OPS[k].formats:
            for df in ("NCX", "NXC"):
                c = random_config(rng, op=k, D=2, groups="2", fmt=f, df=df, dtype="f32", grad=False, bias=True,
                                  limit=800)
                make_case("cov_%s_bias" % fmt_tag(c), "coverage", c, rng)
    # attribute defaults: data_format NXC, the default format, strides/dilations/pads omitted
    for k, o in OPS.items():
        c = {"op": k, "N": 2, "a": 2, "b": 3, "X": [5, 4], "K": [3, 2], "omit": list(o.attrs)}
        if o.rule == "T_CBD":  # output_shape is required: the natural size, as the attribute
            c["oshape"] = c["os_attr"] = [7, 5]
            c["omit"] = [a for a in o.attrs if a != "output_shape"]
        make_case("def_%s_all_defaults" % k, "coverage", c, rng)


def gen_autopad(rng):
    """Every auto_pad mode for every op, with odd total padding, in NCX and NXC."""
    spellings = {"explicit": ["explicit", "none", "NOTSET"], "valid": ["valid", "VALID"],
                 "same_upper": ["same_upper", "SAME_UPPER"], "same_lower": ["same_lower", "Same_Lower"]}
    i = 0
    for k, o in OPS.items():
        for ap, spells in spellings.items():
            for D in (1, 2):
                i += 1
                spell = spells[i % len(spells)]
                # odd total padding on every axis where the rule makes it possible: K even for forward
                # SAME (stride 1), and for transposed ops an odd sum / an output_shape that leaves T odd
                for _ in range(1000):
                    c = random_config(rng, op=k, D=D, ap=spell, dtype="f32", grad=False, limit=800,
                                      df=("NCX", "NXC")[i % 2] if o.onednn else "any")
                    res = resolve(c)
                    if ap in ("same_upper", "same_lower"):
                        tot = [pb + pe for pb, pe, _ in res] if o.rule == "F" else None
                        if o.rule == "F" and not all(t % 2 == 1 for t in tot):
                            continue
                        if o.rule == "T_CT" and not all(((c["d"][a] * (c["K"][a] - 1) + 1) - c["s"][a]) % 2 == 1
                                                        for a in range(D)):
                            continue
                        if o.rule == "T_CBD":
                            Ts = []
                            for a in range(D):
                                pb, pe, _ = rule_f(c["oshape"][a], c["K"][a], c["s"][a], c["d"][a], ap, 0, 0)
                                Ts.append(pb + pe)
                            if not all(t % 2 == 1 for t in Ts):
                                continue
                    if o.rule == "T_OV" and ap != "explicit" and c.get("oshape") is None and rng.random() < 0.6:
                        continue  # mostly with output_shape: that is where the modes differ
                    break
                make_case("pad_%s_%s_%dd" % (k, spell, D), "auto_pad", c, rng)
    # OV backprop ops, same_upper vs same_lower with an output_shape giving an odd total
    for k in ("ov_cbd", "ov_gcbd"):
        for ap in ("same_upper", "same_lower", "explicit", "valid"):
            for D in (1, 2):
                while True:
                    c = random_config(rng, op=k, D=D, ap=ap, dtype="f32", grad=False, limit=800)
                    if c.get("oshape") is None:
                        continue
                    Ts = [c["s"][a] * (c["X"][a] - 1) + c["d"][a] * (c["K"][a] - 1) + 1 + c["opad"][a] - c["oshape"][a]
                          for a in range(D)]
                    if all(t > 0 and t % 2 == 1 for t in Ts):
                        break
                make_case("pad_%s_%s_oshape_oddT_%dd" % (k, ap, D), "auto_pad", c, rng)
    # OV backprop, output_shape beyond the full length: zero-extended (rule T-OV, D2)
    for k in ("ov_cbd", "ov_gcbd"):
        for ap in ("explicit", "same_upper", "same_lower", "valid"):
            c = random_config(rng, op=k, D=2, ap=ap, dtype="f32", grad=False, limit=800)
            L = [c["s"][a] * (c["X"][a] - 1) + c["d"][a] * (c["K"][a] - 1) + 1 for a in range(2)]
            c["oshape"] = c["os_input"] = [L[0] + c["opad"][0] + 2, L[1] + 1]
            make_case("pad_%s_%s_oshape_past_L" % (k, ap), "auto_pad", c, rng)
    # forward SAME with stride > 1 and kernel/dilation combinations that make T odd or zero
    for k in ("ov_conv", "dnn_conv", "dnn_ctbwd", "dnn_ctbpd"):
        for ap in ("same_upper", "same_lower"):
            c = complete({"op": k, "N": 1, "a": 2, "b": 2, "X": [7, 6], "K": [2, 3], "s": [2, 3], "d": [2, 1],
                          "auto_pad": ap, "pb": [5, 1], "pe": [0, 7], "data_format": "NCX",
                          "fmt": OPS[k].default_fmt})
            make_case("pad_%s_%s_stride_odd" % (k, ap), "auto_pad", c, rng)


def gen_opad(rng):
    """output_padding: op <= pe (computed values), op > pe (zeros past L), op >= stride (allowed here)."""
    for k in ("ov_cbd", "ov_gcbd", "dnn_ct"):
        G = 1 if k == "ov_cbd" else 2
        base = {"op": k, "G": G, "N": 2, "a": 2, "b": 1, "fmt": OPS[k].default_fmt, "data_format": "NCX"}
        # 1-D: (pb, pe, op) with s = 2
        for pb, pe, op in ((1, 1, 1), (1, 2, 1), (0, 0, 1), (1, 0, 1), (0, 1, 3), (2, 0, 4)):
            c = complete(dict(base, X=[4], K=[3], s=[2], pb=[pb], pe=[pe], opad=[op], auto_pad="explicit"))
            make_case("opad_%s_1d_pb%d_pe%d_op%d" % (k, pb, pe, op), "output_padding", c, rng)
        # 2-D, op >= stride on one axis, op > pe on the other
        c = complete(dict(base, X=[3, 4], K=[3, 2], s=[1, 2], d=[2, 1], pb=[1, 0], pe=[0, 0], opad=[2, 1],
                          auto_pad="explicit", data_format="NXC"))
        make_case("opad_%s_2d_op_ge_stride" % k, "output_padding", c, rng)
        # 3-D with valid and same: output_padding still applies (T-OV without output_shape / T-CT)
        for ap in ("valid", "same_upper", "same_lower"):
            c = complete(dict(base, X=[2, 3, 2], K=[2, 2, 3], s=[2, 1, 2], pb=[1, 0, 0], pe=[0, 1, 0],
                              opad=[1, 2, 0], auto_pad=ap))
            make_case("opad_%s_3d_%s" % (k, ap), "output_padding", c, rng)
    # output_padding with an OV output_shape: only the SAME modes use it (in T)
    for k in ("ov_cbd", "ov_gcbd"):
        for ap in ("same_upper", "same_lower", "explicit"):
            c = complete({"op": k, "G": 1 if k == "ov_cbd" else 3, "N": 1, "a": 1, "b": 2, "X": [3, 4], "K": [3, 3],
                          "s": [2, 2], "pb": [1, 0], "pe": [1, 2], "opad": [1, 3], "auto_pad": ap,
                          "oshape": [6, 9], "os_input": [6, 9]})
            make_case("opad_%s_%s_with_oshape" % (k, ap), "output_padding", c, rng)
    # ops where output_padding is validated but has no effect
    for k in ("dnn_cbd", "dnn_ctbpd", "dnn_ctbwd"):
        c = random_config(rng, op=k, D=2, dtype="f32", grad=False, limit=800)
        c["opad"] = [3, 1]
        c["omit"] = [a for a in c.get("omit", []) if a != "output_padding"]
        make_case("opad_%s_no_effect" % k, "output_padding", c, rng)


def gen_output_shape(rng):
    """oneDNN ConvolutionBackpropData: output_shape as input or attribute, full or spatial form."""
    i = 0
    for form in ("full-input", "spatial-input", "full-attr", "spatial-attr"):
        for df in ("NCX", "NXC", None):
            for D in (1, 2, 3):
                i += 1
                c = random_config(rng, op="dnn_cbd", D=D, df=df, os_form=form, dtype="f32", grad=False, limit=800)
                make_case("oshape_dnn_cbd_%s_%s_%dd" % (form, (df or "dflt").lower(), D), "output_shape", c, rng)
    # both given: the input wins (a different, also consistent attribute value is ignored)
    for df in ("NCX", "NXC"):
        c = complete({"op": "dnn_cbd", "G": 2, "N": 1, "a": 1, "b": 2, "X": [3, 2], "K": [3, 2], "s": [2, 2],
                      "auto_pad": "explicit", "data_format": df, "fmt": "OIX"})
        c["oshape"] = [7, 4]
        full = lambda y: [1, 4] + y if df == "NCX" else [1] + y + [4]  # noqa: E731
        c["os_input"], c["os_attr"] = full([7, 4]), full([8, 5])
        assert cbd_valid_yo(3, 3, 2, 1, "explicit", 0, 0) == [7, 8]
        make_case("oshape_dnn_cbd_both_input_wins_%s" % df.lower(), "output_shape", c, rng)
    # every valid Yo for one stride-3 axis, for each auto_pad mode
    for ap in ("explicit", "valid", "same_upper", "same_lower"):
        for Yo in cbd_valid_yo(3, 2, 3, 1, ap, 1, 2):
            c = complete({"op": "dnn_cbd", "N": 2, "a": 2, "b": 1, "X": [3], "K": [2], "s": [3], "pb": [1], "pe": [2],
                          "auto_pad": ap, "data_format": "NCX", "fmt": "OIX", "oshape": [Yo], "os_input": [Yo]})
            make_case("oshape_dnn_cbd_%s_yo%d" % (ap, Yo), "output_shape", c, rng)


def gen_special(rng):
    """Corners: N = 0, kernel larger than input, 1x1 stride > 1, stride > kernel (gaps), big dilation."""
    for k, o in OPS.items():
        c = random_config(rng, op=k, D=2, dtype="f32", grad=False, limit=800, os_form="spatial-input")
        c["N"] = 0
        c["grad"] = False
        make_case("corner_%s_batch0" % k, "corner", c, rng)
    for k in OPS:
        conv = OPS[k].comp == "conv"
        c = complete({"op": k, "N": 2, "G": 1, "a": 2, "b": 3, "X": [2, 3] if conv else [3, 2], "K": [5, 3],
                      "s": [1, 2], "d": [1, 2], "pb": [2, 1], "pe": [1, 3], "auto_pad": "explicit",
                      "data_format": "NCX", "fmt": OPS[k].default_fmt})
        if OPS[k].rule == "T_CBD":
            c["oshape"] = c["os_input"] = [cbd_valid_yo(3, 5, 1, 1, "explicit", 2, 1)[0],
                                           cbd_valid_yo(2, 3, 2, 2, "explicit", 1, 3)[-1]]
        make_case("corner_%s_kernel_larger_than_input" % k, "corner", c, rng)
        c = complete({"op": k, "N": 2, "G": 1, "a": 3, "b": 2, "X": [5, 4], "K": [1, 1], "s": [3, 2],
                      "auto_pad": "explicit", "data_format": "NXC", "fmt": OPS[k].default_fmt})
        if OPS[k].rule == "T_CBD":
            c["oshape"] = c["os_input"] = [13, 8]
        make_case("corner_%s_1x1_stride" % k, "corner", c, rng)


def gen_grad(rng):
    """Gradients of every op, format and layout, f64 and f32."""
    for k, o in OPS.items():
        fmts = list(o.formats)
        for dt in ("f64", "f32"):
            for j, f in enumerate(fmts):
                df = ("NCX", "NXC")[j % 2] if o.onednn else "any"
                if dt == "f32" and o.onednn:
                    df = ("NXC", "NCX")[j % 2]
                D = (1, 2, 3)[(j + (dt == "f32")) % 3]
                c = random_config(rng, op=k, D=D, fmt=f, df=df, dtype=dt, grad=True, bias=False, limit=800)
                make_case("grad_%s_%s_%dd" % (fmt_tag(c), dt, D), "gradient", c, rng)
        if k in ("dnn_conv", "dnn_ct"):
            for dt in ("f64", "f32"):
                c = random_config(rng, op=k, D=2, groups="2", dtype=dt, grad=True, bias=True, limit=800)
                make_case("grad_%s_bias_%s" % (fmt_tag(c), dt), "gradient", c, rng)
        if o.rule in ("T_OV", "T_CBD"):  # with an output_shape input: its gradient is null
            for ap in ("same_upper", "explicit"):
                while True:
                    c = random_config(rng, op=k, D=2, ap=ap, dtype="f64", grad=True, limit=800,
                                      os_form="full-input")
                    if c.get("os_input") is not None:
                        break
                make_case("grad_%s_oshape_%s" % (k, ap), "gradient", c, rng)
    # forward ops whose last input positions receive no products: their gradient is exactly 0
    for k in ("ov_conv", "dnn_ctbwd"):
        c = complete({"op": k, "N": 2, "a": 2, "b": 2, "X": [8], "K": [2], "s": [3], "pb": [0], "pe": [0],
                      "dtype": "f64", "grad": True, "data_format": "NCX", "fmt": OPS[k].default_fmt})
        make_case("grad_%s_untouched_tail" % k, "gradient", c, rng)


def gen_low_precision(rng):
    """f16 and bf16 for every op (inputs rounded first, oracle in f64); some with gradients."""
    for k in OPS:
        for dt in ("f16", "bf16"):
            c = random_config(rng, op=k, dtype=dt, grad=False, limit=800)
            make_case("lp_%s_%s_%dd" % (k, dt, len(c["X"])), "low_precision", c, rng)
    for i, k in enumerate(OPS):
        dt = ("f16", "bf16")[i % 2]
        c = random_config(rng, op=k, dtype=dt, grad=True, limit=600)
        make_case("lp_grad_%s_%s" % (k, dt), "low_precision", c, rng)
    # f32 files computed in a 16-bit dtype (the library converts the inputs), and f16 files with the
    # dtype key omitted (the first input's dtype is the compute dtype)
    for k, dt in (("ov_gcbd", "f16"), ("dnn_conv", "bf16"), ("dnn_cbd", "f16"), ("ov_conv", "bf16")):
        c = random_config(rng, op=k, dtype=dt, grad=True, limit=600)
        c["in_dtype"] = "f32"
        make_case("lp_%s_%s_from_f32_files" % (k, dt), "low_precision", c, rng)
    for k in ("ov_cbd", "dnn_ct"):
        c = random_config(rng, op=k, dtype="f16", grad=False, limit=600)
        c["dtype_omit"] = True
        make_case("lp_%s_f16_dtype_from_input" % k, "low_precision", c, rng)
    # f64 files computed in f32
    c = random_config(rng, op="dnn_ctbpd", dtype="f32", grad=True, limit=600)
    c["in_dtype"] = "f64"
    make_case("lp_dnn_ctbpd_f32_from_f64_files", "low_precision", c, rng)


def gen_spelling_and_files(rng):
    """Letter case of format strings (D10), and .npy variants outside the CASES.md contract."""
    for k in ("dnn_conv", "dnn_ct", "dnn_cbd", "dnn_ctbpd", "dnn_ctbwd"):
        for j, f in enumerate(OPS[k].formats):
            c = random_config(rng, op=k, D=2, fmt=f, df=("NCX", "NXC")[j], dtype="f32", grad=False, limit=800)
            c["data_format"] = ("ncx", "Nxc")[j]
            c["fmt_spelling"] = f.lower() if j == 0 else f[0] + f[1:].lower()
            make_case("case_%s_%s_%s" % (k, c["data_format"], c["fmt_spelling"]), "spelling", c, rng)
    # C order and little-endian are the contract; Fortran order and big-endian are standard .npy
    # that the reader may accept (then the values must be right) or refuse cleanly.
    for k in ("ov_gconv", "dnn_ct"):
        c = random_config(rng, op=k, D=2, dtype="f64", grad=True, limit=800)
        c["fortran_data"] = True
        c["big_endian_filter"] = True
        c["ok_or_error"] = "Fortran-order data and big-endian filter .npy files"
        make_case("file_%s_fortran_bigendian" % k, "spelling", c, rng)
    # strides far above any size, with a small result: valid per OPS.md 3.3 (no upper bound); a
    # refusal must still be clean
    c = complete({"op": "dnn_ct", "a": 1, "b": 2, "X": [1, 2], "K": [3, 2], "s": [1 << 50, 3], "data_format": "NCX",
                  "fmt": "IOX", "dtype": "f64", "ok_or_error": "stride 2^50 on an axis of size 1: result 3 long",
                  "oracle_s": [1, 3]})
    make_case("file_dnn_ct_stride_2p50_size1", "spelling", c, rng)
    c = complete({"op": "ov_conv", "a": 2, "b": 1, "X": [5], "K": [3], "s": [1 << 50], "dtype": "f64",
                  "ok_or_error": "stride 2^50: one output position", "oracle_s": [7]})
    make_case("file_ov_conv_stride_2p50", "spelling", c, rng)


def gen_random(rng):
    for i in range(N_RANDOM):
        c = random_config(rng, limit=1200)
        make_case("rand_%03d_%s_%dd" % (i, c["op"], len(c["X"])), "random", c, rng)


def gen_examples(rng):
    """OPS.md section 10, Examples 1 to 5, with every number asserted against the oracle."""
    f64 = "f64"
    ex1 = {"op": "ov_cbd", "a": 1, "b": 1, "X": [3], "K": [3], "s": [2], "auto_pad": "explicit", "dtype": f64,
           "fixed": {"data": [1, 2, 3], "filter": [1, 2, 3]}}
    make_case("ex1_row1", "example", dict(ex1, pb=[1], pe=[0], opad=[1], expect={"out": [2, 5, 4, 9, 6, 9, 0]}), rng)
    make_case("ex1_row2", "example", dict(ex1, pb=[1], pe=[1], opad=[1], expect={"out": [2, 5, 4, 9, 6, 9]}), rng)
    make_case("ex1_row3_grad", "example",
              dict(ex1, pb=[1], pe=[1], opad=[0], grad=True, fixed=dict(ex1["fixed"], dy=[1, 0, 0, 0, 1]),
                   expect={"out": [2, 5, 4, 9, 6], "ddata": [2, 0, 2], "dfilter": [0, 4, 0]}), rng)
    ov6 = dict(ex1, pb=[0], pe=[0], oshape=[6], os_input=[6])
    for ap, want in (("same_upper", [2, 5, 4, 9, 6, 9]), ("same_lower", [1, 2, 5, 4, 9, 6]),
                     ("valid", [1, 2, 5, 4, 9, 6])):
        make_case("ex2_ov_%s" % ap, "example", dict(ov6, auto_pad=ap, expect={"out": want}), rng)
    make_case("ex2_ov_explicit_pb1", "example", dict(ov6, pb=[1], pe=[7], expect={"out": [2, 5, 4, 9, 6, 9]}), rng)
    make_case("ex2_ov_same_upper_oshape8", "example",
              dict(ex1, auto_pad="same_upper", oshape=[8], os_input=[8], expect={"out": [1, 2, 5, 4, 9, 6, 9, 0]}), rng)
    cbd = dict(ex1, op="dnn_cbd", data_format="NCX", fmt="OIX", oshape=[6], os_input=[1, 1, 6])
    make_case("ex2_dnn_cbd_same_upper", "example", dict(cbd, auto_pad="same_upper", expect={"out": [1, 2, 5, 4, 9, 6]}), rng)
    make_case("ex2_dnn_cbd_same_lower", "example", dict(cbd, auto_pad="same_lower", expect={"out": [2, 5, 4, 9, 6, 9]}), rng)
    make_case("ex2_dnn_cbd_explicit", "example",
              dict(cbd, auto_pad="explicit", pb=[1], pe=[0], expect={"out": [2, 5, 4, 9, 6, 9]}), rng)
    error_case("ex2_dnn_cbd_valid_error", {
        "opset": "onednn", "op": "ConvolutionBackpropData",
        "attrs": {"strides": [2], "auto_pad": "valid", "data_format": "NCX", "filter_format": "OIX"},
        "inputs": ["data.npy", "filter.npy", "output_shape.npy"], "dtype": "f64", "output": "out.npy"},
        {"data.npy": np.array([[[1., 2, 3]]]), "filter.npy": np.array([[[1., 2, 3]]]),
         "output_shape.npy": np.array([1, 1, 6], dtype="<i8")},
        "OPS.md Example 2: valid gives floor((6-3)/2)+1 = 2 != 3 (rule T-CBD)", ["output_shape"])
    ex3 = {"op": "ov_conv", "a": 1, "b": 1, "X": [4], "K": [3], "s": [2], "dtype": f64,
           "fixed": {"data": [1, 2, 3, 4], "filter": [1, 0, -1], "dy": [1, 1]}}
    make_case("ex3_conv_same_upper_grad", "example",
              dict(ex3, auto_pad="same_upper", grad=True,
                   expect={"out": [-2, 3], "ddata": [1, 0, 0, 0], "dfilter": [4, 6, 3]}), rng)
    make_case("ex3_conv_same_lower", "example", dict(ex3, auto_pad="same_lower", expect={"out": [-2, -2]}), rng)
    make_case("ex3_dnn_conv_same_upper", "example",
              dict(ex3, op="dnn_conv", data_format="NCX", fmt="OIX", auto_pad="SAME_UPPER", grad=True,
                   expect={"out": [-2, 3], "ddata": [1, 0, 0, 0], "dfilter": [4, 6, 3]}), rng)
    bp = {"a": 1, "b": 1, "X": [2], "K": [3], "s": [2], "dtype": f64, "fixed": {"data": [1, 1], "filter": [1, 0, -1]}}
    make_case("ex3_dnn_cbd_explicit", "example",
              dict(bp, op="dnn_cbd", data_format="NCX", fmt="OIX", pb=[0], pe=[1], oshape=[4], os_input=[1, 1, 4],
                   expect={"out": [1, 0, 0, 0]}), rng)
    make_case("ex3_dnn_cbd_same_upper", "example",
              dict(bp, op="dnn_cbd", data_format="NCX", fmt="OIX", auto_pad="same_upper", oshape=[4],
                   os_input=[1, 1, 4], expect={"out": [1, 0, 0, 0]}), rng)
    make_case("ex3_ov_cbd_same_upper", "example",
              dict(bp, op="ov_cbd", auto_pad="same_upper", oshape=[4], os_input=[4], expect={"out": [0, 0, 0, -1]}), rng)
    make_case("ex3_ov_cbd_same_lower", "example",
              dict(bp, op="ov_cbd", auto_pad="same_lower", oshape=[4], os_input=[4], expect={"out": [1, 0, 0, 0]}), rng)
    ex4 = {"G": 2, "a": 1, "b": 1, "X": [2], "K": [2], "dtype": f64, "data_format": "NXC"}
    make_case("ex4_dnn_ct_nxc_g2", "example",
              dict(ex4, op="dnn_ct", fmt="IOX", fixed={"data": [[[1, 2], [3, 4]]], "filter": [[[1, 1]], [[1, -1]]]},
                   expect={"out": [1, 2, 4, 2, 3, -4]}), rng)
    make_case("ex4_dnn_ctbwd_nxc_g2", "example",
              dict(ex4, op="dnn_ctbwd", X=[3], fmt="IOX",
                   fixed={"data": [[[1, 0], [0, 1], [1, 1]]], "filter": [[[1, 1]], [[1, -1]]]},
                   expect={"out": [1, -1, 1, 0]}), rng)
    make_case("ex4_dnn_ctbpd_nxc_g2", "example",
              dict(ex4, op="dnn_ctbpd", X=[3], fmt="OIX",
                   fixed={"data": [[[1, 0], [0, 1], [1, 1]]], "filter": [[[1, 1], [1, -1]]]},
                   expect={"out": [1, -1, 1, 0]}), rng)
    make_case("ex5_ov_gcbd_g2", "example",
              {"op": "ov_gcbd", "G": 2, "a": 1, "b": 2, "X": [2], "K": [2], "s": [2], "dtype": f64,
               "fixed": {"data": [1, 2, 3, 4], "filter": [[[[1, 1], [1, -1]]], [[[2, 0], [0, 1]]]]},
               "expect": {"out": [1, 1, 2, 2, 1, -1, 2, -2, 6, 0, 8, 0, 0, 3, 0, 4]}}, rng)


# ------------------------------------------------------------------------------------------------
# Hostile and invalid cases (OPS.md 3.5, CASES.md exit status 1).
# ------------------------------------------------------------------------------------------------

def npy_bytes(arr):
    b = io.BytesIO()
    np.save(b, arr)
    return b.getvalue()


def npy_header(descr, shape, payload=b""):
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(tuple(shape)))
    hdr = hdr.ljust(((len(hdr) + 11) // 64 + 1) * 64 - 11) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode("latin1") + payload


def gen_errors(rng):
    r = lambda *s: rng.uniform(-1, 1, s).astype("<f4")  # noqa: E731

    def ov_conv(**over):
        case = {"opset": "openvino", "op": "Convolution",
                "attrs": {"strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1],
                          "auto_pad": "explicit"},
                "inputs": ["data.npy", "filter.npy"], "output": "out.npy"}
        case.update(over)
        return case

    conv_files = lambda: {"data.npy": r(1, 2, 5, 5), "filter.npy": r(3, 2, 3, 3)}  # noqa: E731

    def ov_cbd(**over):
        case = {"opset": "openvino", "op": "ConvolutionBackpropData",
                "attrs": {"strides": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1], "dilations": [1, 1],
                          "auto_pad": "explicit", "output_padding": [0, 0]},
                "inputs": ["data.npy", "filter.npy"], "output": "out.npy"}
        case.update(over)
        return case

    cbd_files = lambda: {"data.npy": r(1, 2, 3, 3), "filter.npy": r(2, 3, 3, 3)}  # noqa: E731

    def dnn(op, **over):
        case = {"opset": "onednn", "op": op,
                "attrs": {"strides": [1], "pads_begin": [0], "pads_end": [0], "dilations": [1], "auto_pad": "none",
                          "groups": 2, "data_format": "NCX"},
                "inputs": ["data.npy", "filter.npy"], "output": "out.npy"}
        attrs = over.pop("attrs", {})
        case["attrs"].update(attrs)
        case["attrs"] = {k: v for k, v in case["attrs"].items() if v is not None}
        case.update(over)
        return case

    def with_attr(case, **kv):
        case = json.loads(json.dumps(case))
        for k, v in kv.items():
            if v is None:
                case["attrs"].pop(k, None)
            else:
                case["attrs"][k] = v
        return case

    E = error_case
    # 1. unknown opset / op / attribute, wrong input count, missing output_shape
    E("err_unknown_opset", ov_conv(opset="tensorflow"), conv_files(), "unknown opset", ["opset", "tensorflow"])
    E("err_unknown_op", ov_conv(op="Deconvolution"), conv_files(), "unknown op", ["Deconvolution"])
    E("err_op_of_other_opset", ov_conv(op="ConvTranspose"), conv_files(), "ConvTranspose is oneDNN only",
      ["ConvTranspose"])
    E("err_op_wrong_case", ov_conv(op="convolution"), conv_files(), "op names are exact", ["convolution"])
    E("err_unknown_attr_groups_ov", with_attr(ov_conv(), groups=1), conv_files(), "OV Convolution has no groups",
      ["groups"])
    E("err_unknown_attr_output_padding_ov_conv", with_attr(ov_conv(), output_padding=[0, 0]), conv_files(),
      "OV Convolution has no output_padding", ["output_padding"])
    E("err_unknown_attr_kernel", with_attr(ov_cbd(), kernel=[3, 3]), cbd_files(), "no such attribute", ["kernel"])
    E("err_unknown_attr_filter_format_on_conv",
      dnn("Convolution", attrs={"filter_format": "OIX"}), {"data.npy": r(1, 4, 6), "filter.npy": r(4, 2, 3)},
      "oneDNN Convolution has weights_format, not filter_format", ["filter_format"])
    E("err_unknown_attr_output_shape_on_ctbwd",
      dnn("ConvTransposeBackwardData", attrs={"output_shape": [1, 4, 6], "weights_format": "IOX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(2, 2, 3)}, "ConvTransposeBackwardData has no output_shape",
      ["output_shape"])
    E("err_too_many_inputs_ov_conv", ov_conv(inputs=["data.npy", "filter.npy", "filter.npy"]), conv_files(),
      "OV Convolution takes exactly 2 inputs", ["input"])
    E("err_too_few_inputs", ov_cbd(inputs=["data.npy"]), cbd_files(), "a filter is required", ["input"])
    E("err_too_many_inputs_ctbpd",
      dnn("ConvTransposeBackpropData", attrs={"filter_format": "OIX"},
          inputs=["data.npy", "filter.npy", "bias.npy"]),
      {"data.npy": r(1, 4, 6), "filter.npy": r(2, 2, 3), "bias.npy": r(2)}, "no bias input (D7)", ["input"])
    E("err_dnn_cbd_no_output_shape", dnn("ConvolutionBackpropData", attrs={"filter_format": "OIX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(4, 1, 3)}, "output_shape neither input nor attribute",
      ["output_shape"])
    # 2. wrong types, wrong lengths
    E("err_strides_string", with_attr(ov_conv(), strides="1,1"), conv_files(), "strides must be an int list",
      ["strides"])
    E("err_strides_float", with_attr(ov_conv(), strides=[1.5, 1]), conv_files(), "strides must hold integers",
      ["strides"])
    E("err_pads_scalar", with_attr(ov_conv(), pads_begin=1), conv_files(), "pads_begin must be a list",
      ["pads_begin"])
    E("err_auto_pad_list", with_attr(ov_conv(), auto_pad=["same_upper"]), conv_files(), "auto_pad is a string",
      ["auto_pad"])
    E("err_groups_list", dnn("Convolution", attrs={"groups": [2], "weights_format": "OIX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(4, 2, 3)}, "groups is an int", ["groups"])
    E("err_groups_string", dnn("Convolution", attrs={"groups": "2", "weights_format": "OIX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(4, 2, 3)}, "groups is an int", ["groups"])
    E("err_data_format_int", dnn("Convolution", attrs={"data_format": 1, "weights_format": "OIX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(4, 2, 3)}, "data_format is a string", ["data_format"])
    E("err_attr_null", with_attr(ov_conv(), dilations=[1, 1]) | {"attrs": {"strides": None}}, conv_files(),
      "null is not an int list", ["strides"])
    E("err_strides_length", with_attr(ov_conv(), strides=[1, 1, 1]), conv_files(), "strides has D+1 values",
      ["strides"])
    E("err_pads_end_length", with_attr(ov_cbd(), pads_end=[1]), cbd_files(), "pads_end has D-1 values",
      ["pads_end"])
    E("err_dilations_empty", with_attr(ov_conv(), dilations=[]), conv_files(), "an empty list is not length D",
      ["dilations"])
    E("err_output_padding_length", with_attr(ov_cbd(), output_padding=[0, 0, 0]), cbd_files(),
      "output_padding has D+1 values", ["output_padding"])
    # 3. non-positive stride/dilation, negative pads, groups < 1
    E("err_stride_zero", with_attr(ov_conv(), strides=[1, 0]), conv_files(), "stride 0", ["strides"])
    E("err_stride_negative", with_attr(ov_cbd(), strides=[-2, 2]), cbd_files(), "stride -2", ["strides"])
    E("err_dilation_zero", with_attr(ov_cbd(), dilations=[0, 1]), cbd_files(), "dilation 0", ["dilations"])
    E("err_pads_begin_negative", with_attr(ov_conv(), pads_begin=[0, -1]), conv_files(), "pads_begin -1",
      ["pads_begin"])
    E("err_pads_end_negative", with_attr(ov_cbd(), pads_end=[-1, 1]), cbd_files(), "pads_end -1", ["pads_end"])
    E("err_pads_negative_ignored_by_valid", with_attr(ov_conv(), auto_pad="valid", pads_begin=[-1, 0]), conv_files(),
      "a pad that auto_pad ignores must still be >= 0 (OPS.md 3.3)", ["pads_begin"])
    E("err_pads_length_ignored_by_same", with_attr(ov_cbd(), auto_pad="same_upper", pads_end=[0]), cbd_files(),
      "a pad that auto_pad ignores must still have length D", ["pads_end"])
    E("err_output_padding_negative", with_attr(ov_cbd(), output_padding=[0, -1]), cbd_files(), "output_padding -1",
      ["output_padding"])
    E("err_output_padding_negative_no_effect_op",
      dnn("ConvTransposeBackwardData", attrs={"output_padding": [-1], "weights_format": "IOX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(2, 2, 3)}, "output_padding is validated even without effect (D7)",
      ["output_padding"])
    E("err_groups_zero", dnn("Convolution", attrs={"groups": 0, "weights_format": "OIX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(4, 2, 3)}, "groups 0", ["groups"])
    E("err_groups_negative", dnn("ConvTranspose", attrs={"groups": -2, "weights_format": "IOX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(4, 2, 3)}, "groups -2", ["groups"])
    # 4. bad strings
    E("err_auto_pad_same", with_attr(ov_conv(), auto_pad="same"), conv_files(), "'same' is not a mode", ["auto_pad"])
    E("err_auto_pad_garbage", with_attr(ov_cbd(), auto_pad="same_upperx"), cbd_files(), "unknown mode", ["auto_pad"])
    E("err_data_format_nchw", dnn("Convolution", attrs={"data_format": "NCHW", "weights_format": "OIX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(4, 2, 3)}, "NCHW is not NCX/NXC", ["data_format"])
    E("err_weights_format_oix_on_convtranspose", dnn("ConvTranspose", attrs={"weights_format": "OIX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(4, 2, 3)}, "ConvTranspose takes IOX/XOI only (D4)",
      ["weights_format"])
    E("err_weights_format_xoi_on_conv", dnn("Convolution", attrs={"weights_format": "XOI"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(3, 2, 4)}, "Convolution takes OIX/XIO only", ["weights_format"])
    E("err_filter_format_iox_on_cbd",
      dnn("ConvolutionBackpropData", attrs={"filter_format": "IOX", "output_shape": [1, 4, 8]}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(4, 2, 3)}, "ConvolutionBackpropData takes OIX/XIO only",
      ["filter_format"])
    # 5. rank errors
    E("err_data_rank_2", ov_conv(attrs={}), {"data.npy": r(2, 5), "filter.npy": r(3, 2, 3)}, "rank 2 < 3",
      ["rank", "data"])
    E("err_ov_conv_rank_6", ov_conv(attrs={}), {"data.npy": r(1, 1, 2, 2, 2, 2), "filter.npy": r(1, 1, 1, 1, 1, 1)},
      "OV Convolution rank must be 3, 4 or 5", ["rank", "data"])
    E("err_ov_cbd_rank_6", ov_cbd(attrs={}), {"data.npy": r(1, 1, 2, 2, 2, 2), "filter.npy": r(1, 1, 1, 1, 1, 1)},
      "OV ConvolutionBackpropData rank must be 3, 4 or 5", ["rank"])
    E("err_filter_rank_mismatch", ov_conv(), {"data.npy": r(1, 2, 5, 5), "filter.npy": r(3, 2, 3)},
      "filter rank 3 for data rank 4", ["filter", "rank"])
    E("err_group_filter_rank_not_plus_one",
      ov_conv(op="GroupConvolution"), {"data.npy": r(1, 2, 5, 5), "filter.npy": r(2, 1, 3, 3)},
      "GroupConvolution needs a filter of rank data+1", ["filter", "rank"])
    E("err_dnn_weights_rank", dnn("ConvTranspose", attrs={"weights_format": "IOX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(4, 2, 3, 3)}, "weights rank 4 for src rank 3", ["weights", "rank"])
    # 6. zero-size dimensions
    E("err_zero_channels", ov_conv(), {"data.npy": r(1, 0, 5, 5), "filter.npy": r(3, 0, 3, 3)}, "C = 0",
      ["channel", "dim", "data", "C_IN", "filter", "zero"])
    E("err_zero_spatial", ov_cbd(), {"data.npy": r(1, 2, 0, 3), "filter.npy": r(2, 3, 3, 3)}, "spatial size 0",
      ["spatial", "dim", "size 0", "zero"])
    E("err_zero_kernel", ov_conv(), {"data.npy": r(1, 2, 5, 5), "filter.npy": r(3, 2, 0, 3)}, "kernel size 0",
      ["kernel", "filter", "dim", "zero"])
    E("err_zero_groups_filter", ov_cbd(op="GroupConvolutionBackpropData"),
      {"data.npy": r(1, 2, 3, 3), "filter.npy": r(0, 1, 3, 3, 3)}, "G = 0", ["group", "filter", "dim", "zero"])
    E("err_zero_out_channels", dnn("ConvTranspose", attrs={"weights_format": "IOX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(4, 0, 3)}, "OC/g = 0", ["weights", "OC", "dim", "zero", "channel"])
    # 7. channel mismatches
    E("err_ov_conv_channels", ov_conv(), {"data.npy": r(1, 3, 5, 5), "filter.npy": r(3, 2, 3, 3)},
      "data has 3 channels, filter wants 2", ["C_IN", "channel", "filter"])
    E("err_ov_gconv_not_exact_D11", ov_conv(op="GroupConvolution"),
      {"data.npy": r(1, 5, 5, 5), "filter.npy": r(2, 1, 2, 3, 3)}, "C = 5 != G*I = 4 (D11)",
      ["C_IN", "channel", "filter"])
    E("err_ov_cbd_channels", ov_cbd(), {"data.npy": r(1, 3, 3, 3), "filter.npy": r(2, 3, 3, 3)},
      "data.C = 3 != filter[0] = 2", ["C_IN", "channel", "filter"])
    E("err_ov_gcbd_channels", ov_cbd(op="GroupConvolutionBackpropData"),
      {"data.npy": r(1, 4, 3, 3), "filter.npy": r(2, 1, 3, 3, 3)}, "data.C = 4 != G*C_in_g = 2",
      ["C_IN", "channel", "filter"])
    E("err_dnn_conv_ic", dnn("Convolution", attrs={"weights_format": "OIX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(4, 3, 3)}, "IC = 4 != g*I = 6", ["IC", "channel", "weights"])
    E("err_dnn_conv_oc_not_divisible", dnn("Convolution", attrs={"weights_format": "OIX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(3, 2, 3)}, "OC = 3 not divisible by groups 2",
      ["OC", "group", "weights"])
    E("err_dnn_ct_ic", dnn("ConvTranspose", attrs={"weights_format": "XOI"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(3, 2, 2)}, "IC = 4 != weights_I = 2", ["IC", "channel", "weights"])
    E("err_dnn_ct_ic_not_divisible", dnn("ConvTranspose", attrs={"weights_format": "IOX"}),
      {"data.npy": r(1, 3, 6), "filter.npy": r(3, 2, 3)}, "IC = 3 not divisible by groups 2",
      ["IC", "group", "src", "weights"])
    E("err_dnn_cbd_channels", dnn("ConvolutionBackpropData", attrs={"filter_format": "OIX", "output_shape": [8]}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(6, 1, 3)}, "C_dd = 4 != filter_O = 6",
      ["out_channels", "channel", "filter"])
    E("err_dnn_ctbpd_channels", dnn("ConvTransposeBackpropData", attrs={"filter_format": "OIX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(3, 2, 3)}, "C_dd = 4 != g*filter_O = 6",
      ["out_channels", "channel", "filter"])
    E("err_dnn_ctbpd_ic_not_divisible", dnn("ConvTransposeBackpropData", attrs={"filter_format": "OIX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(2, 3, 3)}, "IC = 3 not divisible by groups 2",
      ["in_channels", "group", "filter"])
    E("err_dnn_ctbwd_channels", dnn("ConvTransposeBackwardData", attrs={"weights_format": "IOX"}),
      {"data.npy": r(1, 4, 6), "filter.npy": r(2, 3, 3)}, "C_dd = 4 != g*weights_O = 6",
      ["OC", "channel", "weights"])
    E("err_bias_length", dnn("Convolution", attrs={"weights_format": "OIX"},
                             inputs=["data.npy", "filter.npy", "bias.npy"]),
      {"data.npy": r(1, 4, 6), "filter.npy": r(4, 2, 3), "bias.npy": r(3)}, "bias length 3 != OC = 4", ["bias"])
    E("err_bias_2d", dnn("ConvTranspose", attrs={"weights_format": "IOX"},
                         inputs=["data.npy", "filter.npy", "bias.npy"]),
      {"data.npy": r(1, 4, 6), "filter.npy": r(4, 1, 3), "bias.npy": r(1, 2)}, "bias must be 1-D", ["bias"])
    # 8. bad output_shape
    cbdo = ov_cbd(inputs=["data.npy", "filter.npy", "output_shape.npy"])
    E("err_oshape_2d", cbdo, dict(cbd_files(), **{"output_shape.npy": np.array([[5, 5]], dtype="<i8")}),
      "output_shape must be 1-D", ["output_shape"])
    E("err_oshape_float", cbdo, dict(cbd_files(), **{"output_shape.npy": np.array([5., 5.], dtype="<f4")}),
      "output_shape must be integer", ["output_shape"])
    E("err_oshape_length_ov", cbdo, dict(cbd_files(), **{"output_shape.npy": np.array([1, 3, 5, 5], dtype="<i8")}),
      "OV output_shape is spatial only (D5)", ["output_shape"])
    E("err_oshape_zero", cbdo, dict(cbd_files(), **{"output_shape.npy": np.array([5, 0], dtype="<i4")}),
      "output_shape value 0", ["output_shape"])
    E("err_oshape_negative", cbdo, dict(cbd_files(), **{"output_shape.npy": np.array([-3, 5], dtype="<i8")}),
      "output_shape value -3", ["output_shape"])
    dcbd = lambda **a: dnn("ConvolutionBackpropData", attrs=dict({"filter_format": "OIX", "groups": 1}, **a),  # noqa
                           inputs=["data.npy", "filter.npy", "output_shape.npy"])
    dfiles = lambda os_: {"data.npy": r(2, 3, 4), "filter.npy": r(3, 2, 3),  # noqa: E731
                          "output_shape.npy": np.array(os_, dtype="<i8")}
    E("err_dnn_oshape_length", dcbd(), dfiles([2, 6]), "length neither rank 3 nor D 1", ["output_shape"])
    E("err_dnn_oshape_n_mismatch", dcbd(), dfiles([1, 2, 6]), "full form N = 1 != 2", ["output_shape"])
    E("err_dnn_oshape_c_mismatch", dcbd(), dfiles([2, 3, 6]), "full form C = 3 != g*filter_I = 2", ["output_shape"])
    E("err_dnn_oshape_nxc_order", dcbd(data_format="NXC"),
      {"data.npy": r(2, 4, 3), "filter.npy": r(3, 2, 3), "output_shape.npy": np.array([2, 2, 6], dtype="<i8")},
      "NXC full form is [N, Y, C]: [2, 2, 6] has C = 6", ["output_shape"])
    E("err_dnn_oshape_attr_zero", dnn("ConvolutionBackpropData",
                                      attrs={"filter_format": "OIX", "groups": 1, "output_shape": [2, 2, 0]}),
      {"data.npy": r(2, 3, 4), "filter.npy": r(3, 2, 3)}, "output_shape attribute value 0", ["output_shape"])
    E("err_dnn_oshape_attr_type", dnn("ConvolutionBackpropData",
                                      attrs={"filter_format": "OIX", "groups": 1, "output_shape": "6"}),
      {"data.npy": r(2, 3, 4), "filter.npy": r(3, 2, 3)}, "output_shape attribute is an int list", ["output_shape"])
    # 9./10. sizes
    E("err_forward_kernel_too_big", with_attr(ov_conv(), dilations=[3, 1]), conv_files(),
      "X + pb + pe = 5 < eff = 7", ["kernel", "dilation", "pads", "data", "filter", "size", "eff"])
    E("err_ctbwd_valid_too_small", dnn("ConvTransposeBackwardData",
                                       attrs={"weights_format": "IOX", "auto_pad": "valid", "pads_begin": [3]}),
      {"data.npy": r(1, 4, 2), "filter.npy": r(2, 2, 3)}, "valid: X = 2 < eff = 3",
      ["kernel", "diff_dst", "size", "eff", "weights"])
    E("err_transposed_y_below_1", with_attr(ov_cbd(), pads_begin=[4, 1], pads_end=[3, 1]), cbd_files(),
      "Y = 2*2+3-4-3 = 0", ["pads", "output", "size"])
    E("err_ct_y_below_1", dnn("ConvTranspose", attrs={"weights_format": "IOX", "pads_begin": [2], "pads_end": [2]}),
      {"data.npy": r(1, 4, 1), "filter.npy": r(4, 1, 3)}, "Y = 3-2-2 = -1", ["pads", "output", "size"])
    # 12. T-CBD inconsistency
    E("err_tcbd_explicit_too_large", dcbd(strides=[2]), dfiles([2, 2, 12]), "floor((12-3)/2)+1 = 5 != 4",
      ["output_shape"])
    E("err_tcbd_same_too_small", dcbd(strides=[2], auto_pad="same_lower"), dfiles([6]), "ceil(6/2) = 3 != 4",
      ["output_shape"])
    # 13. grad_output, npy files
    gcase = ov_cbd(grad_output="dy.npy", grad_inputs=["ddata.npy", "dfilter.npy"])
    E("err_grad_output_shape", gcase, dict(cbd_files(), **{"dy.npy": r(1, 3, 5, 6)}),
      "result is [1, 3, 5, 5]", ["grad_output"])
    E("err_grad_output_integer", gcase, dict(cbd_files(), **{"dy.npy": np.ones((1, 3, 5, 5), dtype="<i4")}),
      "grad_output must be float", ["grad_output"])
    E("err_grad_output_missing", gcase, cbd_files(), "dy.npy does not exist", ["grad_output", "dy.npy"])
    E("err_grad_inputs_count", ov_cbd(grad_output="dy.npy", grad_inputs=["ddata.npy"]),
      dict(cbd_files(), **{"dy.npy": r(1, 3, 5, 5)}), "one entry per input", ["grad_inputs"])
    E("err_grad_inputs_without_grad_output", ov_cbd(grad_inputs=["ddata.npy", "dfilter.npy"]), cbd_files(),
      "grad_inputs without grad_output", ["grad_inputs", "grad_output"])
    good = npy_bytes(r(1, 2, 5, 5))
    E("err_npy_truncated", ov_conv(), {"data.npy": good[:len(good) - 7], "filter.npy": r(3, 2, 3, 3)},
      "payload 7 bytes short", ["data", "inputs[0]", "npy"])
    E("err_npy_header_truncated", ov_conv(), {"data.npy": good[:40], "filter.npy": r(3, 2, 3, 3)},
      "header cut off", ["data", "inputs[0]", "npy"])
    E("err_npy_garbage", ov_conv(), {"data.npy": r(1, 2, 5, 5), "filter.npy": bytes(rng.integers(0, 256, 300,
                                                                                                 dtype=np.uint8))},
      "not an npy file", ["filter", "inputs[1]", "npy"])
    E("err_npy_empty_file", ov_conv(), {"data.npy": b"", "filter.npy": r(3, 2, 3, 3)}, "empty file",
      ["data", "inputs[0]", "npy"])
    E("err_npy_bad_header_dict", ov_conv(),
      {"data.npy": b"\x93NUMPY\x01\x00" + struct.pack("<H", 54) + b"{'descr': '<f4', 'shape': (1, 2, 5, 5), }".ljust(53)
                   + b"\n" + r(1, 2, 5, 5).tobytes(), "filter.npy": r(3, 2, 3, 3)},
      "header without fortran_order", ["data", "inputs[0]", "npy"])
    E("err_npy_absurd_shape", ov_conv(),
      {"data.npy": npy_header("<f4", (1 << 20, 1 << 20, 1 << 20, 1 << 20), b"\0" * 64), "filter.npy": r(3, 2, 3, 3)},
      "shape product 2^80 overflows int64", ["data", "inputs[0]", "npy", "shape", "size"])
    E("err_npy_huge_shape_short_payload", ov_conv(),
      {"data.npy": npy_header("<f4", (1, 2, 100000, 100000), b"\0" * 64), "filter.npy": r(3, 2, 3, 3)},
      "80 GB claimed, 64 bytes present: refuse before allocating", ["data", "inputs[0]", "npy", "size", "bytes"])
    E("err_npy_complex_dtype", ov_conv(),
      {"data.npy": np.zeros((1, 2, 5, 5), dtype="<c8"), "filter.npy": r(3, 2, 3, 3)}, "complex dtype",
      ["data", "inputs[0]", "npy", "dtype", "c8"])
    E("err_npy_negative_dim", ov_conv(),
      {"data.npy": npy_header("<f4", (1, 2, -5, 5)), "filter.npy": r(3, 2, 3, 3)}, "negative dim",
      ["data", "inputs[0]", "npy", "shape"])
    E("err_missing_input_file", ov_conv(), {"data.npy": r(1, 2, 5, 5)}, "filter.npy does not exist",
      ["filter", "inputs[1]"])
    E("err_input_is_directory", ov_conv(inputs=["data.npy", "expected"]), {"data.npy": r(1, 2, 5, 5)},
      "an input path that is a directory", ["inputs[1]", "filter", "expected"])
    # 14. sizes that must be refused, not allocated
    E("err_huge_output_shape", cbdo, dict(cbd_files(), **{"output_shape.npy": np.array([1 << 20, 1 << 20], dtype="<i8")}),
      "a 12 TB result: refuse before allocating", ["output"])
    E("err_overflow_output_shape", cbdo,
      dict(cbd_files(), **{"output_shape.npy": np.array([1 << 40, 1 << 40], dtype="<i8")}),
      "2^80 elements overflow int64", ["output"])
    E("err_huge_output_padding", with_attr(ov_cbd(), output_padding=[1 << 40, 1 << 40]), cbd_files(),
      "output_padding 2^40 on two axes: the result size overflows", ["output"])
    E("err_huge_stride_convtranspose",
      dnn("ConvTranspose", attrs={"weights_format": "IOX", "strides": [1 << 50], "groups": 1}),
      {"data.npy": r(1, 1, 1 << 4), "filter.npy": r(1, 1, 3)}, "stride 2^50 makes a 2^54-element result", ["output", "strides"])
    # case-file errors (CASES.md)
    E("err_case_not_json", None, conv_files(), "not JSON", ["case", "json"], raw_case='{"op": "Convolution",,}\n')
    E("err_case_not_object", None, conv_files(), "a JSON list", ["case", "object"], raw_case="[1, 2]\n")
    E("err_case_no_op", {k: v for k, v in ov_conv().items() if k != "op"}, conv_files(), "op is required", ["op"])
    E("err_case_inputs_not_list", ov_conv(inputs="data.npy"), conv_files(), "inputs must be a list", ["inputs"])
    E("err_case_dtype_unknown", ov_conv(dtype="f8"), conv_files(), "dtype f8 is not a compute type", ["dtype"])
    E("err_case_dtype_integer", ov_conv(dtype="i32"), conv_files(), "dtype i32 is not a compute type", ["dtype"])
    E("err_case_no_output", {k: v for k, v in ov_conv().items() if k != "output"}, conv_files(),
      "output is required", ["output"])
    E("err_case_integer_data", ov_conv(), {"data.npy": np.ones((1, 2, 5, 5), dtype="<i8"), "filter.npy": r(3, 2, 3, 3)},
      "float inputs required for data (no dtype key)", ["dtype", "data", "inputs[0]"])


# ------------------------------------------------------------------------------------------------

def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    # one stream per section, so that editing one section leaves the others' files unchanged
    sections = [gen_examples, gen_coverage, gen_autopad, gen_opad, gen_output_shape, gen_special, gen_grad,
                gen_low_precision, gen_random, gen_errors, gen_spelling_and_files]
    for i, gen in enumerate(sections):
        gen(np.random.default_rng([SEED, i]))
    total = 0
    for root, _, files in os.walk(OUT):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    for k in sorted(COUNTS):
        print("%-16s %4d" % (k, COUNTS[k]))
    print("%-16s %4d cases, %.2f MB" % ("total", sum(COUNTS.values()), total / 1e6))


if __name__ == "__main__":
    main()
