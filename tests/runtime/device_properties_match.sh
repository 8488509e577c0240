#!/bin/sh
# Runs tools/dev/device_properties (every field of cudaGetDeviceProperties, one line each) on
# mcsim's single-h100 preset and compares it with a real H100's answers, recorded in
# docs/real-driver/runtime-h100-2026-11-25-device-properties.txt. pciBusID differs by design (the
# real machine's GPU sits on bus 0 of a virtual machine; the preset puts it on bus 16).
#   device_properties_match.sh MCSIM_BINARY PROGRAM RECORD
set -u
mcsim=$1 program=$2 record=$3
dir=$(mktemp -d /tmp/mcsim-props-XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
sed -n '/^# the real H100/,$p' "$record" | sed 1d | grep -v '^pciBusID = ' >"$dir/real"
"$mcsim" run --topology single-h100 -- "$program" >"$dir/all" || { echo "FAIL: the program failed"; cat "$dir/all"; exit 1; }
grep -v '^pciBusID = ' "$dir/all" >"$dir/sim"
if ! diff "$dir/real" "$dir/sim"; then
  echo "FAIL: cudaGetDeviceProperties differs from the H100's (< real, > mcsim)"
  exit 1
fi
echo "$(($(wc -l <"$dir/sim") + 1)) values as the H100's (pciBusID aside)"
