// Crash-safe checkpoints: a module's state dictionary (Module::state_dict(): parameters and
// buffers), optionally an optimizer's (Optimizer::state_dict()) and a few text values (epoch,
// step, an RNG state), saved as .npy files with a checksummed manifest.
//
// On disk. A checkpoint folder holds generations, each a subfolder written once and never
// changed after:
//
//   ckpt/gen-00000007/MANIFEST                       the commit record (below)
//   ckpt/gen-00000007/model.encoder.0.weight.npy     one .npy per entry (np.load reads them)
//   ckpt/gen-00000007/optimizer.m.0.npy
//   ckpt/gen-00000006/...                            the previous generation
//   ckpt/.lock                                       taken (flock) by a save while it runs
//
// The MANIFEST is a line format, each line ending in '\n':
//
//   tapegrad-checkpoint 1                             format and version
//   info <key> <value>                                text values: key [A-Za-z0-9_.-]+, value to the end of the line
//   entry <name> <file> <bytes> <crc32> <dtype> <shape>
//   end <crc32>                                       of every byte of the manifest before this line
//
// <name> is the entry's name with every byte outside [A-Za-z0-9_.-] written %XX (so are a
// leading '.' and '%'); a module's entries are "model.<state_dict name>", an optimizer's
// "optimizer.<name>". <file> is a plain file name in the generation folder, <bytes> its size,
// <crc32> zlib's CRC-32 of all its bytes (8 lowercase hex digits), <dtype> the entry's dtype
// (bf16 entries are stored as '<f4' files, NumPy has no bf16, and come back as bf16), <shape>
// "[2,3]" ("[]" for a 0-d tensor). Text values are "info" lines; save_checkpoint with an
// optimizer records its kind as info "optimizer".
//
// Saving (one writer at a time per folder, serialised by the lock): remove generations
// without a MANIFEST (left by a crashed save), write every entry file of the next generation
// (gen-<largest number seen + 1>) and fsync it, write MANIFEST.tmp and fsync it, then ONE
// rename(2) MANIFEST.tmp -> MANIFEST commits the generation; fsync the folders, and delete
// every generation older than the one that was newest before (its MANIFEST first). So at
// every instant the newest committed generation, or the one before it, is whole on disk:
// a crash (or power loss: everything is fsynced before the commit) at any point of a save
// leaves the previous checkpoint loadable, and a second crash during the next save too.
//
// Loading takes the newest generation that verifies: its MANIFEST parses and its checksum
// matches, every listed file exists with the listed size and CRC-32 and decodes to the
// listed dtype and shape, and the folder holds no other file. A generation that fails is
// skipped (the reason, naming the file, is kept in LoadedCheckpoint::skipped) and the one
// before it is tried; when none verifies, the error lists why each was refused. Entries are
// never checked for NaN or Inf: those can be legitimate values, and a flipped byte is caught
// by the CRC.
//
// Checkpoints written before this format (a flat folder of .npy files) are not read.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/optim.hpp"

namespace tg::nn {

// Text values saved with a checkpoint: key [A-Za-z0-9_.-]+ (at most 200 bytes), value any
// bytes but '\n', '\r' and NUL.
using CheckpointInfo = std::map<std::string, std::string>;

struct CheckpointData {
    StateDict tensors;  // entry name -> tensor, saved in this order
    CheckpointInfo info;
};

struct LoadedCheckpoint {
    StateDict tensors;
    CheckpointInfo info;
    std::string generation;            // the generation folder read, e.g. "ckpt/gen-00000007"
    std::vector<std::string> skipped;  // newer generations refused, each with the reason
};

// The low level: any named tensors and text values (names: 1 to 1000 bytes).
void write_checkpoint(const std::string& dir, const CheckpointData& data);
LoadedCheckpoint read_checkpoint(const std::string& dir);

// A module alone (its entries "model.<name>").
void save_checkpoint(const Module& m, const std::string& dir);
void save_state_dict(const StateDict& dict, const std::string& dir);

// A module, its optimizer ("optimizer.<name>") and text values (the key "optimizer" is
// reserved: it records the optimizer's kind), so that training resumes exactly.
void save_checkpoint(const Module& m, const Optimizer& opt, const std::string& dir, const CheckpointInfo& info = {});

// The module entries of the newest verified generation (keys: the module's names).
StateDict read_state_dict(const std::string& dir);

// Loads `m` through Module::load_state_dict: a missing entry, or a shape or dtype that
// differs from the module's, is an error naming the entry (and nothing is changed); with
// strict, so is an entry the module has no place for.
LoadResult load_checkpoint(Module& m, const std::string& dir, bool strict = true);

// Loads a module and its optimizer (strictly, both or neither; an optimizer of another
// kind is refused) and returns the checkpoint's text values (info) and what was skipped.
LoadedCheckpoint load_checkpoint(Module& m, Optimizer& opt, const std::string& dir);

namespace detail {
// Fault injection for tests: the save raises SIGKILL on reaching its k-th step (0-based; the
// steps: after taking the lock, after creating the generation folder, in the middle of and
// after each entry file, after MANIFEST.tmp, after the commit rename, after the fsyncs, after
// each pruned generation). k < 0 turns it off. Without a call, the environment variable
// TAPEGRAD_CHECKPOINT_FAULT=k is read at each save.
void set_checkpoint_fault(int k);
// How many fault steps the last save passed (a save with fault k >= this count completes).
int checkpoint_fault_steps();
}  // namespace detail

}  // namespace tg::nn
