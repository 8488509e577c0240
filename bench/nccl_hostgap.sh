#!/usr/bin/env bash
# The host's part of NCCL's small collectives (docs/model.md, "What the host costs"; docs/real-driver.md,
# section 13): tools/probe/nccl_hostgap.cu, built here against the toolkit's NCCL, on `hgx-h200` with
# two GPUs, with the host's clock off (MCSIM_HOST_COST_PERCENT=0, the model before it) and on, beside
# the figures two real H200s gave (docs/real-driver/h200x2-nccl-hostgap-2026-11-29.txt). Prints, per
# size, plain and behind-a-busy-kernel medians, their difference (the host's part), and mcsim / real.
# Uses the build's mcsim (MCSIM_BENCH_BUILD_DIR, default build).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MCSIM_BENCH_BUILD_DIR:-$repo/build}
ninja -C "$build" -j"${MCSIM_BENCH_JOBS:-2}" mcsim cuda nvidia-ml >/dev/null
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
prog="$build/bench/nccl_hostgap"
if [[ ! -x "$prog" || "$repo/tools/probe/nccl_hostgap.cu" -nt "$prog" ]]; then
  "$nvcc" -std=c++17 -O2 -gencode 'arch=compute_90,code=[sm_90,compute_90]' -o "$prog" \
    "$repo/tools/probe/nccl_hostgap.cu" -L/usr/local/cuda/lib64 -lnccl -Xlinker -rpath=/usr/local/cuda/lib64
fi
real="$repo/docs/real-driver/h200x2-nccl-hostgap-2026-11-29.txt"
compare='
import re, sys
def read(lines):
    d = {}
    for l in lines:
        m = re.match(r"hostgap count (\d+) (plain|behind a busy kernel): median ([\d.]+)", l)
        if m: d[(int(m[1]), m[2] == "plain")] = float(m[3])
    return d
real = read(open(sys.argv[1]))
sim = read(sys.argv[2].splitlines())
print("%9s %16s %16s %16s %11s" % ("floats", "plain", "behind busy", "host part", "plain ratio"))
for n in sorted({k[0] for k in real}):
    if (n, True) not in sim: continue
    sp, sb, rp, rb = sim[(n, True)], sim[(n, False)], real[(n, True)], real[(n, False)]
    print(f"{n:>9} {sp:7.1f} / {rp:6.1f} {sb:7.1f} / {rb:6.1f} {sp - sb:7.1f} / {rp - rb:6.1f} {sp / rp:11.2f}")

'
for percent in 0 100; do
  out=$(MCSIM_HOST_COST_PERCENT=$percent CUDA_VISIBLE_DEVICES=0,1 MCSIM_TOPOLOGY=hgx-h200 NCCL_NVLS_ENABLE=0 \
        NCCL_ALGO=Ring "$build/bin/mcsim" run -- "$prog" 2>&1 | grep '^hostgap')
  echo "== MCSIM_HOST_COST_PERCENT=$percent (us: mcsim / real)"
  python3 -c "$compare" "$real" "$out"
done
