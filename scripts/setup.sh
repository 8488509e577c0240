#!/usr/bin/env bash
# Installs mcsim's dependencies from Debian's packages, builds it, and runs the sample program on
# the embedded default node (8x H100). Safe to run again: installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config libsystemc-dev libboost-dev
          nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libbenchmark-dev libzstd-dev python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
if [[ ! -f /usr/local/cuda/include/cuda.h && -z "${CUDAToolkit_ROOT:-}" ]]; then
  echo "mcsim needs the CUDA toolkit headers (cuda.h): install the CUDA toolkit or set CUDAToolkit_ROOT" >&2
  exit 1
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
ninja -C build
echo
echo "== build/bin/mcsim run -- build/examples/node_tour"
build/bin/mcsim run -- build/examples/node_tour
echo
echo "== build/bin/mcsim run -- build/examples/allreduce_tour"
build/bin/mcsim run -- build/examples/allreduce_tour
