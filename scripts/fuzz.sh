#!/usr/bin/env bash
# Fuzzes tapegrad's readers with libFuzzer (Debian's clang, ASan + UBSan):
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]     default 60 s each, targets npy idx case checkpoint
# Each target starts from its committed corpus (fuzz/corpus/NAME) and writes what it
# discovers to build/fuzz/corpus/NAME; a crash is saved as build/fuzz/crash-NAME-*. To keep
# a finding as a regression case, copy it into fuzz/corpus/NAME (ctest replays that folder).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(npy idx case checkpoint)
bash scripts/configure.sh fuzz
cmake --build --preset fuzz --target "${targets[@]/#/fuzz_}"
for t in "${targets[@]}"; do
  mkdir -p "build/fuzz/corpus/$t"
  echo "== fuzz_$t for ${secs}s"
  ASAN_OPTIONS=detect_leaks=1 "build/fuzz/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=4096 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="build/fuzz/crash-$t-" "build/fuzz/corpus/$t" "fuzz/corpus/$t" 2>&1 |
    grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss|.*cov: )" | tail -3
done
