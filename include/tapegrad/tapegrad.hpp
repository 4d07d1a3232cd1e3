// tapegrad: everything a training program or a gradient-check test needs, in one include.
//   #include <tapegrad/tapegrad.hpp>      then link tapegrad::tapegrad
// The parts: <tapegrad/core/tensor.hpp> (Tensor, dtypes, printing),
// <tapegrad/core/factories.hpp> (zeros, randn, arange, ...; the Generator of
// tapegrad/core/random.hpp), <tapegrad/autograd/...> (the tape, differentiable ops, the conv family,
// gradcheck), <tapegrad/nn/...> (layers, optimizers, checkpoints). The spec op table
// (<tapegrad/spec/opset.hpp>, tapegrad::spec) and dataset / picture I/O
// (<tapegrad/data/...>, tapegrad::data) are separate libraries. Optional headers:
// <tapegrad/core/xtensor.hpp> (zero-copy xtensor views; needs xtensor) and
// <tapegrad/autograd/catch_matchers.hpp> (Catch2 matchers over the gradient checks).
#pragma once

#include "tapegrad/core/blas.hpp"
#include "tapegrad/core/dtype.hpp"
#include "tapegrad/core/error.hpp"
#include "tapegrad/core/factories.hpp"
#include "tapegrad/core/npy.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/core/tensor.hpp"
#include "tapegrad/ops/conv_explain.hpp"
#include "tapegrad/ops/conv_geometry.hpp"
#include "tapegrad/ops/index.hpp"
#include "tapegrad/ops/math.hpp"
#include "tapegrad/ops/matmul.hpp"
#include "tapegrad/ops/reduce.hpp"
#include "tapegrad/ops/shape_ops.hpp"
#include "tapegrad/autograd/variable.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/autograd/indexing.hpp"
#include "tapegrad/autograd/reductions.hpp"
#include "tapegrad/autograd/conv.hpp"
#include "tapegrad/autograd/pool.hpp"
#include "tapegrad/autograd/batch_norm.hpp"
#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/layers.hpp"
#include "tapegrad/nn/optim.hpp"
#include "tapegrad/nn/schedule.hpp"
#include "tapegrad/nn/checkpoint.hpp"
