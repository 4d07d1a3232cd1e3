#!/usr/bin/env bash
# Installs the Debian packages tapegrad builds, tests and trains with, if any is missing.
# apt-get as root, through sudo otherwise. Nothing is downloaded outside Debian's archive.
set -euo pipefail
pkgs=(g++ cmake ninja-build pkg-config make libxtensor-dev libxsimd-dev xtl-dev libopenblas-dev libopenblas-openmp-dev catch2
      nlohmann-json3-dev libcli11-dev zlib1g-dev libcairo2-dev fonts-dejavu-core dataset-fashion-mnist python3 libopenmpi-dev openmpi-bin)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
