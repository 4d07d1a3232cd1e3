// Files written whole or not at all: the bytes go to a fresh temporary name beside the target
// (created exclusively, so no other file is ever touched), which is renamed into place once
// complete; a reader sees the old file or the whole new one. The new file gets the mode of
// the file it replaces, or, when there is none, 0666 less the process's umask, as open()
// would give it. One implementation for every file tapegrad writes (.npy results,
// checkpoints, pictures).
#pragma once
#include <string>

namespace tg {

// Creates an empty temporary file beside `path` with the mode `path` will have, and returns
// its name. Errors (key `key`) name `path`.
std::string create_temp_beside(const std::string& path, const std::string& key);

// Renames the finished temporary over `path` (atomic on one file system); removes the
// temporary and fails naming `path` if that is impossible.
void move_into_place(const std::string& temp, const std::string& path, const std::string& key);

}  // namespace tg
