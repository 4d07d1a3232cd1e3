// Checkpoints: a module's state dictionary (Module::state_dict(): parameters and buffers)
// saved as one .npy file per entry in a folder, named by the entry (readable by NumPy:
// np.load("ckpt/encoder.0.weight.npy")). Saving writes a new folder and swaps it into
// place, so a crash never leaves a half-written checkpoint.
#pragma once
#include <string>

#include "tapegrad/nn/module.hpp"

namespace tg::nn {

void save_checkpoint(const Module& m, const std::string& dir);
void save_state_dict(const StateDict& dict, const std::string& dir);

// Every .npy file of `dir` as a state dictionary (keys: the file names without ".npy", in
// name order). bf16 tensors come back as f32 (NumPy has no bf16; see write_npy).
StateDict read_state_dict(const std::string& dir);

// Loads `m` from `dir` through Module::load_state_dict: a missing file, or a shape or dtype
// that differs from the module's, is an error naming the entry (and nothing is changed);
// with strict, so is a file the module has no entry for. f32 files are accepted for bf16
// entries (that is how bf16 is saved).
LoadResult load_checkpoint(Module& m, const std::string& dir, bool strict = true);

}  // namespace tg::nn
