#!/usr/bin/env bash
# The test command: installs what is missing, builds the optimized and the sanitizer
# (ASan + UBSan) presets, and runs every test in both (the MPI tests in the optimized one:
# tests/dist/dist.cmake).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
for preset in release asan; do
  echo "== $preset: configure and build"
  # TAPEGRAD_MPI=ON: the MPI tests must be there (install-deps.sh installed OpenMPI), never
  # quietly left out because CMake did not find it.
  bash scripts/configure.sh "$preset" -DTAPEGRAD_MPI=ON
  cmake --build --preset "$preset"
  echo "== $preset: test"
  ctest --preset "$preset"
done
