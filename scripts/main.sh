#!/usr/bin/env bash
# The main job: installs what is missing, builds the optimized preset, shows the worked
# examples of docs/ops.md (section "Worked examples") through `tapegrad explain` / `tapegrad run`, then trains the
# flagship example (a Fashion-MNIST convolutional autoencoder whose decoder is made of
# transposed convolutions) and writes a picture of its reconstructions to out/.
#   EPOCHS=3 bash scripts/main.sh    # train longer (default 1 epoch of 60 000 images)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
echo "== the worked examples of docs/ops.md (tapegrad explain + run)"
sh examples/run_worked_examples.sh build/release/tapegrad
mkdir -p out
echo "== training the flagship example on Fashion-MNIST"
build/release/fashion_autoencoder --epochs "${EPOCHS:-1}" --out out/fashion_autoencoder.png \
  --ckpt out/fashion_autoencoder.ckpt
echo "picture: $(pwd)/out/fashion_autoencoder.png"
