#!/bin/sh
# Builds the runtime example README.md shows (hello.cu) with nvcc's defaults, runs it through
# `mcsim run`, and checks it prints what the README says it prints, and nothing on stderr.
#   readme_example.sh SOURCE_DIR MCSIM_BINARY NVCC
set -u
src=$1 mcsim=$2 nvcc=$3
dir=$(mktemp -d /tmp/mcsim-readme-XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
sed -n "/^cat > hello.cu <<'CU'\$/,/^CU\$/p" "$src/README.md" | sed '1d;$d' >"$dir/hello.cu"
expected=$(sed -n 's/^nvcc -o hello hello.cu && build\/bin\/mcsim run -- .\/hello *# *//p' "$src/README.md")
[ -s "$dir/hello.cu" ] && [ -n "$expected" ] || { echo "FAIL: README.md has no hello.cu example"; exit 1; }
# nvcc is not ours: no sanitizer runtime preloaded into it (the ASan suite preloads one for the
# programs it runs).
env -u LD_PRELOAD "$nvcc" -o "$dir/hello" "$dir/hello.cu" || { echo "FAIL: nvcc"; exit 1; }
out=$("$mcsim" run -- "$dir/hello" 2>"$dir/err")
status=$?
echo "$out"
if [ "$status" -ne 0 ] || [ "$out" != "$expected" ] || [ -s "$dir/err" ]; then
  echo "FAIL: status $status, expected '$expected'"
  cat "$dir/err"
  exit 1
fi
echo "as the README says"
