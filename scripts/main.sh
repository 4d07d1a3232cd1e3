#!/usr/bin/env bash
# The main job: installs what is missing, builds the optimized preset, and runs the
# worked examples of OPS.md section 10 through `tapegrad explain` and `tapegrad run`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
exe=build/release/tapegrad
for c in examples/cases/*/case.json; do
  echo "== $(dirname "$c")"
  "$exe" explain "$c"
  "$exe" run "$c"
done
