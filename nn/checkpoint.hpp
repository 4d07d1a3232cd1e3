// Checkpoints: a module's parameters saved as one .npy file per parameter in a folder
// (readable by NumPy: np.load("ckpt/0.weight.npy")). Saving writes a new folder and swaps
// it into place, so a crash never leaves a half-written checkpoint.
#pragma once
#include <string>

#include "tapegrad/nn/module.hpp"

namespace tg::nn {

void save_checkpoint(const Module& m, const std::string& dir);
// Loads every parameter of `m` from `dir`; a missing file, or a shape or dtype that differs
// from the module's parameter, is an error naming the parameter (and nothing is changed).
void load_checkpoint(Module& m, const std::string& dir);

}  // namespace tg::nn
