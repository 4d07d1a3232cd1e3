#!/usr/bin/env python3
"""Writes the worked examples of docs/ops.md as `tapegrad run` case folders.

Each folder holds a case.json (docs/cases.md), its .npy inputs, and the numbers docs/ops.md computes
by hand:
  expected.npy          the op's result (the case writes it to out.npy)
  expected_<name>.npy   a gradient the case writes to <name>.npy
  expected_error.txt    for a case that must fail: the key its `error:` line names

Only the Python standard library is used (the .npy bytes are packed with struct), so this
runs with any python3. Run it from anywhere; it rewrites the folders next to it:
    python3 examples/cases/make_cases.py
"""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
FORMATS = {"<f8": "d", "<f4": "f", "<i8": "q", "<i4": "i"}


def npy_bytes(shape, values, descr="<f8"):
    """A version-1.0 .npy file: magic, header dict padded to 64 bytes, C-order payload."""
    n = 1
    for d in shape:
        n *= d
    assert n == len(values), (shape, values)
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    payload = struct.pack("<%d%s" % (n, FORMATS[descr]), *values)
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + payload


class T:
    """A tensor for a case file: shape, flat C-order values, .npy dtype."""

    def __init__(self, shape, values, descr="<f8"):
        self.shape, self.values, self.descr = shape, values, descr


def case(name, about, op, inputs, attrs=None, opset="openvino", expected=None, dy=None, grads=None,
         error=None, dtype=None):
    """inputs: list of (file name, T); grads: list of (file name, T) or None per input."""
    return dict(name=name, about=about, op=op, inputs=inputs, attrs=attrs or {}, opset=opset,
                expected=expected, dy=dy, grads=grads, error=error, dtype=dtype)


# Example 1 and 2: data [1,1,3] = [1,2,3], filter [1,1,3] = [1,2,3], stride 2.
D12 = ("data.npy", T([1, 1, 3], [1, 2, 3]))
F12 = ("filter.npy", T([1, 1, 3], [1, 2, 3]))
# Example 3: src [1,1,4] = [1,2,3,4], weights [1,1,3] = [1,0,-1], stride 2.
SRC3 = ("src.npy", T([1, 1, 4], [1, 2, 3, 4]))
W3 = ("weights.npy", T([1, 1, 3], [1, 0, -1]))
DD3 = ("output_delta.npy", T([1, 1, 2], [1, 1]))
F3 = ("filter.npy", T([1, 1, 3], [1, 0, -1]))
# Example 4: NXC, groups 2. src channel 0 = [1,3], channel 1 = [2,4].
SRC4 = ("src.npy", T([1, 2, 2], [1, 2, 3, 4]))
IOX4 = ("weights.npy", T([2, 1, 2], [1, 1, 1, -1]))
DD4 = T([1, 3, 2], [1, 0, 0, 1, 1, 1])
DST4 = T([1, 3, 2], [1, 2, 4, 2, 3, -4])
DSRC4 = T([1, 2, 2], [1, -1, 1, 0])

ONEDNN_NCX_OIX = {"data_format": "NCX", "filter_format": "OIX"}


def ov_shape(v):
    return ("output_shape.npy", T([len(v)], v, "<i8"))


def onednn_shape(v):
    return ("output_shape.npy", T([len(v)], v, "<i4"))


CASES = [
    # ---- Example 1: OV ConvolutionBackpropData, stride 2, asymmetric pads, output_padding
    case("ex1_full", "Example 1: the full transposed result, L = 7 (no padding)",
         "ConvolutionBackpropData", [D12, F12], {"strides": [2], "dilations": [1]},
         expected=T([1, 1, 7], [1, 2, 5, 4, 9, 6, 9])),
    case("ex1_pads1_0_op1", "Example 1 row 1: pads (1, 0), output_padding 1; the last element lies beyond L",
         "ConvolutionBackpropData", [D12, F12],
         {"strides": [2], "dilations": [1], "pads_begin": [1], "pads_end": [0], "output_padding": [1],
          "auto_pad": "explicit"},
         expected=T([1, 1, 7], [2, 5, 4, 9, 6, 9, 0])),
    case("ex1_pads1_1_op1", "Example 1 row 2: pads (1, 1), output_padding 1 (a computed value, not a zero)",
         "ConvolutionBackpropData", [D12, F12],
         {"strides": [2], "dilations": [1], "pads_begin": [1], "pads_end": [1], "output_padding": [1]},
         expected=T([1, 1, 6], [2, 5, 4, 9, 6, 9])),
    case("ex1_pads1_1_op0_grad", "Example 1 row 3 and its gradients for dy = [1, 0, 0, 0, 1]",
         "ConvolutionBackpropData", [D12, F12],
         {"strides": [2], "dilations": [1], "pads_begin": [1], "pads_end": [1], "output_padding": [0]},
         expected=T([1, 1, 5], [2, 5, 4, 9, 6]),
         dy=T([1, 1, 5], [1, 0, 0, 0, 1]),
         grads=[("ddata.npy", T([1, 1, 3], [2, 0, 2])), ("dfilter.npy", T([1, 1, 3], [0, 4, 0]))]),

    # ---- Example 2: output_shape 6 with an odd total padding T = 1
    case("ex2_ov_same_upper", "Example 2: OV same_upper, output_shape [6]: pb = 1 (odd unit at the beginning)",
         "ConvolutionBackpropData", [D12, F12, ov_shape([6])], {"strides": [2], "auto_pad": "same_upper"},
         expected=T([1, 1, 6], [2, 5, 4, 9, 6, 9])),
    case("ex2_ov_same_lower", "Example 2: OV same_lower, output_shape [6]: pb = 0",
         "ConvolutionBackpropData", [D12, F12, ov_shape([6])], {"strides": [2], "auto_pad": "same_lower"},
         expected=T([1, 1, 6], [1, 2, 5, 4, 9, 6])),
    case("ex2_ov_valid", "Example 2: OV valid, output_shape [6]: pb = 0 (implied pe = 1)",
         "ConvolutionBackpropData", [D12, F12, ov_shape([6])], {"strides": [2], "auto_pad": "valid"},
         expected=T([1, 1, 6], [1, 2, 5, 4, 9, 6])),
    case("ex2_ov_explicit_pb1", "Example 2: OV explicit pads_begin 1, output_shape [6]; pads_end (3) is ignored",
         "ConvolutionBackpropData", [D12, F12, ov_shape([6])],
         {"strides": [2], "auto_pad": "explicit", "pads_begin": [1], "pads_end": [3]},
         expected=T([1, 1, 6], [2, 5, 4, 9, 6, 9])),
    case("ex2_ov_same_upper_shape8", "Example 2: OV same_upper, output_shape [8]: T clamps to 0, zero past L = 7",
         "ConvolutionBackpropData", [D12, F12, ov_shape([8])], {"strides": [2], "auto_pad": "same_upper"},
         expected=T([1, 1, 8], [1, 2, 5, 4, 9, 6, 9, 0])),
    case("ex2_onednn_cbd_same_upper",
         "Example 2: oneDNN ConvolutionBackpropData NCX/OIX, output_shape [1,1,6], same_upper: forward SAME on 6 gives pb = 0",
         "ConvolutionBackpropData", [("output_delta.npy", D12[1]), F12, onednn_shape([1, 1, 6])],
         dict(ONEDNN_NCX_OIX, strides=[2], auto_pad="same_upper"), opset="onednn",
         expected=T([1, 1, 6], [1, 2, 5, 4, 9, 6])),
    case("ex2_onednn_cbd_same_lower", "Example 2: oneDNN ConvolutionBackpropData, same_lower: pb = 1",
         "ConvolutionBackpropData", [("output_delta.npy", D12[1]), F12, onednn_shape([1, 1, 6])],
         dict(ONEDNN_NCX_OIX, strides=[2], auto_pad="same_lower"), opset="onednn",
         expected=T([1, 1, 6], [2, 5, 4, 9, 6, 9])),
    case("ex2_onednn_cbd_valid_error",
         "Example 2: oneDNN ConvolutionBackpropData, valid: floor((6-3)/2)+1 = 2 != 3, an error naming output_shape",
         "ConvolutionBackpropData", [("output_delta.npy", D12[1]), F12, onednn_shape([1, 1, 6])],
         dict(ONEDNN_NCX_OIX, strides=[2], auto_pad="valid"), opset="onednn", error="output_shape"),
    case("ex2_onednn_cbd_explicit_pads1_0",
         "Example 2: oneDNN ConvolutionBackpropData, explicit pads (1, 0), output_shape given as an attribute",
         "ConvolutionBackpropData", [("output_delta.npy", D12[1]), F12],
         dict(ONEDNN_NCX_OIX, strides=[2], pads_begin=[1], pads_end=[0], output_shape=[1, 1, 6]), opset="onednn",
         expected=T([1, 1, 6], [2, 5, 4, 9, 6, 9])),

    # ---- Example 3: Convolution with SAME and an odd total, its gradients, the backprop ops
    case("ex3_ov_conv_same_upper_grad", "Example 3: OV Convolution same_upper, pads (0, 1), and its gradients for dy = [1, 1]",
         "Convolution", [("data.npy", SRC3[1]), ("filter.npy", W3[1])], {"strides": [2], "auto_pad": "same_upper"},
         expected=T([1, 1, 2], [-2, 3]), dy=T([1, 1, 2], [1, 1]),
         grads=[("ddata.npy", T([1, 1, 4], [1, 0, 0, 0])), ("dfilter.npy", T([1, 1, 3], [4, 6, 3]))]),
    case("ex3_ov_conv_same_lower", "Example 3: OV Convolution same_lower, pads (1, 0)",
         "Convolution", [("data.npy", SRC3[1]), ("filter.npy", W3[1])], {"strides": [2], "auto_pad": "same_lower"},
         expected=T([1, 1, 2], [-2, -2])),
    case("ex3_onednn_conv_same_upper_grad", "Example 3: oneDNN Convolution NCX/OIX same_upper and its gradients",
         "Convolution", [SRC3, W3],
         {"strides": [2], "auto_pad": "same_upper", "data_format": "NCX", "weights_format": "OIX"}, opset="onednn",
         expected=T([1, 1, 2], [-2, 3]), dy=T([1, 1, 2], [1, 1]),
         grads=[("dsrc.npy", T([1, 1, 4], [1, 0, 0, 0])), ("dweights.npy", T([1, 1, 3], [4, 6, 3]))]),
    case("ex3_onednn_conv_same_lower", "Example 3: oneDNN Convolution NCX/OIX same_lower",
         "Convolution", [SRC3, W3],
         {"strides": [2], "auto_pad": "same_lower", "data_format": "NCX", "weights_format": "OIX"}, opset="onednn",
         expected=T([1, 1, 2], [-2, -2])),
    case("ex3_onednn_cbd_pads0_1",
         "Example 3: oneDNN ConvolutionBackpropData NCX/OIX, pads (0, 1), output_shape [1,1,4]: equals the gradient",
         "ConvolutionBackpropData", [DD3, F3, onednn_shape([1, 1, 4])],
         dict(ONEDNN_NCX_OIX, strides=[2], pads_begin=[0], pads_end=[1]), opset="onednn",
         expected=T([1, 1, 4], [1, 0, 0, 0])),
    case("ex3_onednn_cbd_same_upper", "Example 3: oneDNN ConvolutionBackpropData same_upper (Rule F on 4 gives pads (0, 1))",
         "ConvolutionBackpropData", [DD3, F3, onednn_shape([1, 1, 4])],
         dict(ONEDNN_NCX_OIX, strides=[2], auto_pad="same_upper"), opset="onednn",
         expected=T([1, 1, 4], [1, 0, 0, 0])),
    case("ex3_ov_cbd_same_upper",
         "Example 3: OV ConvolutionBackpropData same_upper, output_shape [4]: pb = 1, not the gradient (D1)",
         "ConvolutionBackpropData", [("data.npy", DD3[1]), F3, ov_shape([4])], {"strides": [2], "auto_pad": "same_upper"},
         expected=T([1, 1, 4], [0, 0, 0, -1])),
    case("ex3_ov_cbd_same_lower", "Example 3: OV ConvolutionBackpropData same_lower, output_shape [4]: pb = 0",
         "ConvolutionBackpropData", [("data.npy", DD3[1]), F3, ov_shape([4])], {"strides": [2], "auto_pad": "same_lower"},
         expected=T([1, 1, 4], [1, 0, 0, 0])),

    # ---- Example 4: oneDNN ConvTranspose NXC groups 2 and its adjoint ops
    case("ex4_convtranspose_nxc_g2", "Example 4: oneDNN ConvTranspose NXC, IOX, groups 2; its data gradient for dy = diff_dst",
         "ConvTranspose", [SRC4, IOX4],
         {"groups": 2, "data_format": "NXC", "weights_format": "IOX", "strides": [1], "pads_begin": [0], "pads_end": [0]},
         opset="onednn", expected=DST4, dy=DD4, grads=[("dsrc.npy", DSRC4), None]),
    case("ex4_convtranspose_xoi_defaults", "Example 4: the same ConvTranspose with the default formats (NXC, XOI)",
         "ConvTranspose", [SRC4, ("weights.npy", T([2, 1, 2], [1, 1, 1, -1]))], {"groups": 2}, opset="onednn",
         expected=DST4),
    case("ex4_convtranspose_backward_data", "Example 4: ConvTransposeBackwardData NXC, IOX, groups 2 on diff_dst",
         "ConvTransposeBackwardData", [("diff_dst.npy", DD4), IOX4],
         {"groups": 2, "data_format": "NXC", "weights_format": "IOX"}, opset="onednn", expected=DSRC4),
    case("ex4_convtranspose_backprop_data_oix", "Example 4: ConvTransposeBackpropData with the old OIX filter [1,2,2]",
         "ConvTransposeBackpropData", [("output_delta.npy", DD4), ("filter.npy", T([1, 2, 2], [1, 1, 1, -1]))],
         {"groups": 2, "data_format": "NXC", "filter_format": "OIX"}, opset="onednn", expected=DSRC4),

    # ---- Example 5: OV GroupConvolutionBackpropData, G = 2, stride 2 (f32 inputs)
    case("ex5_group_cbd", "Example 5: OV GroupConvolutionBackpropData, G = 2, stride 2, f32 inputs",
         "GroupConvolutionBackpropData",
         [("data.npy", T([1, 2, 2], [1, 2, 3, 4], "<f4")),
          ("filter.npy", T([2, 1, 2, 2], [1, 1, 1, -1, 2, 0, 0, 1], "<f4"))],
         {"strides": [2], "pads_begin": [0], "pads_end": [0]},
         expected=T([1, 4, 4], [1, 1, 2, 2, 1, -1, 2, -2, 6, 0, 8, 0, 0, 3, 0, 4])),
]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def write_case(c):
    folder = os.path.join(HERE, c["name"])
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    doc = {"opset": c["opset"], "op": c["op"], "attrs": c["attrs"], "inputs": [n for n, _ in c["inputs"]]}
    if c["dtype"]:
        doc["dtype"] = c["dtype"]
    doc["output"] = "out.npy"
    for name, t in c["inputs"]:
        write(os.path.join(folder, name), npy_bytes(t.shape, t.values, t.descr))
    if c["error"]:
        write(os.path.join(folder, "expected_error.txt"), (c["error"] + "\n").encode())
    else:
        e = c["expected"]
        write(os.path.join(folder, "expected.npy"), npy_bytes(e.shape, e.values))
    if c["dy"]:
        doc["grad_output"] = "dy.npy"
        write(os.path.join(folder, "dy.npy"), npy_bytes(c["dy"].shape, c["dy"].values))
        doc["grad_inputs"] = []
        for g in c["grads"] + [None] * (len(c["inputs"]) - len(c["grads"])):
            doc["grad_inputs"].append(g[0] if g else None)
            if g:
                write(os.path.join(folder, "expected_" + g[0]), npy_bytes(g[1].shape, g[1].values))
    with open(os.path.join(folder, "case.json"), "w") as f:  # one key per line, values compact
        f.write("{\n" + ",\n".join("  %s: %s" % (json.dumps(k), json.dumps(v)) for k, v in doc.items()) + "\n}\n")


def main():
    names = {c["name"] for c in CASES}
    assert len(names) == len(CASES), "duplicate case names"
    for entry in sorted(os.listdir(HERE)):  # drop folders of cases no longer listed
        folder = os.path.join(HERE, entry)
        if entry not in names and os.path.isfile(os.path.join(folder, "case.json")):
            shutil.rmtree(folder)
    lines = ["# Worked examples of docs/ops.md as case files", "",
             "Generated by `make_cases.py` (standard-library Python); do not edit by hand.",
             "Each folder: `case.json`, its `.npy` inputs, `expected.npy` (the result, written to",
             "`out.npy`), `expected_<name>.npy` for each gradient written to `<name>.npy`, or",
             "`expected_error.txt` with the key the `error:` line must name. The expected numbers are",
             "the hand-computed ones of docs/ops.md (section \"Worked examples\"), not tapegrad output.", "",
             "Check them all with `examples/run_worked_examples.sh path/to/tapegrad`.", "",
             "| folder | what it shows |", "| --- | --- |"]
    for c in CASES:
        write_case(c)
        lines.append("| `%s` | %s |" % (c["name"], c["about"]))
    with open(os.path.join(HERE, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %d cases into %s" % (len(CASES), HERE))


if __name__ == "__main__":
    main()
