#!/usr/bin/env bash
# The main job: installs what is missing, builds the optimized preset, shows the worked
# examples of docs/ops.md (section "Worked examples") through `tapegrad explain` / `tapegrad run`, then trains the
# flagship example (a Fashion-MNIST convolutional autoencoder whose decoder is made of
# transposed convolutions) and the Fashion-MNIST classifier, writing their pictures, loss
# curves and checkpoints to out/.
#   EPOCHS=3 bash scripts/main.sh    # train the autoencoder longer (default 1 epoch of 60 000 images)
set -euo pipefail
cd "$(dirname "$0")/.."
# OpenMP threads that wait by sleeping, not spinning: on a machine shared with other work a
# spinning team turns every barrier into a wait for a descheduled thread (the classifier ran
# 4x slower with 2 spinning threads than with 2 sleeping ones at a load of 8 on 2 cores).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
bash scripts/install-deps.sh
bash scripts/configure.sh release
cmake --build --preset release
echo "== the worked examples of docs/ops.md (tapegrad explain + run)"
sh examples/run_worked_examples.sh build/release/tapegrad
echo "== training the flagship example on Fashion-MNIST: a convolutional autoencoder"
build/release/fashion_autoencoder --epochs "${EPOCHS:-1}" --out out
echo "== training the Fashion-MNIST classifier (3 epochs)"
build/release/fashion_classifier --out out
echo "pictures: $(pwd)/out/fashion_autoencoder.png, out/fashion_autoencoder_loss.png, out/fashion_classifier_loss.png"
