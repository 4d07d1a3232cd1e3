#!/usr/bin/env bash
# ctest example.fashion_classifier.distributed: data parallelism computes what one process
# computes. fashion_classifier on 2 MPI ranks at --batch 32 and alone at --batch 64 must give
# the same loss at every step (<out>/fashion_classifier_steps.csv), to float rounding.
#
# Why the curves are the same by construction: the loader gives rank r positions r, r + 2,
# ... of each epoch's order, so step b's two rank batches are together exactly positions
# 64b .. 64b + 63, the single process's batch b (--limit 1024: 16 full steps either way).
# The logged loss is the mean of the ranks' mean losses = the mean over the 64 images; the
# averaged gradients are the 64-image batch's gradient; BatchNorm is SyncBatchNorm, whose
# statistics are the 64 images'. Dropout is off (--dropout 0): its masks follow an image's
# place in its batch, which the split changes. One thread per process, so both sides run
# the same kernels; what differs is the order of the sums (per rank, then across the ranks).
#   distributed_example.sh MPIRUN EXE WORKDIR
set -euo pipefail
mpirun=$1 exe=$2 work=$3
rm -rf "$work"
common=(--limit 1024 --epochs 1 --threads 1 --seed 3 --dropout 0)
"$mpirun" -np 2 "$exe" --distributed --batch 32 "${common[@]}" --out "$work/np2" >"$work.np2.log" 2>&1 ||
  { cat "$work.np2.log"; echo "FAIL: mpirun -np 2 $exe --distributed exited $?"; exit 1; }
"$exe" --batch 64 "${common[@]}" --out "$work/np1" >"$work.np1.log" 2>&1 ||
  { cat "$work.np1.log"; echo "FAIL: $exe exited $?"; exit 1; }
tail -n 3 "$work.np2.log"
grep -q "data parallel: 2 ranks" "$work.np2.log" || { echo "FAIL: the distributed run did not run on 2 ranks"; exit 1; }
# step-by-step: the same steps, each loss within a relative 1e-4 (float rounding through
# 16 Adam steps stays below 1e-5 here; a different batch or unsynchronised BatchNorm
# differs by 1e-2 and more)
paste -d, "$work/np2/fashion_classifier_steps.csv" "$work/np1/fashion_classifier_steps.csv" | awk -F, '
  NR == 1 { next }
  {
    n++
    if ($1 != $4 || $2 != $5) { printf "FAIL: row %d is step %s,%s against %s,%s\n", NR, $1, $2, $4, $5; bad = 1; exit }
    d = $3 - $6; if (d < 0) d = -d
    m = $6 < 0 ? -$6 : $6
    if (d > 1e-4 * m + 1e-7) { printf "FAIL: step %s: loss %s on 2 ranks, %s in one process\n", $2, $3, $6; bad = 1 }
    if (d / m > worst) worst = d / m
    printf "step %2s  np2 %-12s np1 %-12s\n", $2, $3, $6
  }
  END {
    if (bad) exit 1
    if (n != 16) { printf "FAIL: %d steps, expected 16\n", n; exit 1 }
    printf "16 steps equal within float tolerance (largest relative difference %.2g)\n", worst
  }'
