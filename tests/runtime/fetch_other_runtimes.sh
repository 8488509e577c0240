#!/usr/bin/env bash
# Fetches CUDA runtimes of other versions than the toolkit's, for runtime.other_runtime.* (docs/
# runtime.md, "Runtimes of other versions"): Debian's libcudart packages, CUDA 11.8 (bookworm
# non-free) and CUDA 12.4 (trixie non-free), downloaded with apt-get through a sources list of
# their own (the machine's apt configuration is left alone) and unpacked into DIR, which the
# build's configure step then finds (cmake -DMCSIM_OTHER_CUDARTS=... names others).
#   tests/runtime/fetch_other_runtimes.sh BUILD_DIR      (into BUILD_DIR/other-cudart; re-run cmake)
set -euo pipefail
out=${1:?usage: fetch_other_runtimes.sh BUILD_DIR}/other-cudart
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$out"
cat >"$work/sources.list" <<'LIST'
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm non-free
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie non-free
LIST
apt=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root)
apt-get "${apt[@]}" update >/dev/null
cd "$work"
for pkg in libcudart11.0 libcudart12; do
  apt-get "${apt[@]}" download "$pkg" >/dev/null
  dpkg -x "$pkg"_*.deb "$work/x"
done
for lib in "$work"/x/usr/lib/x86_64-linux-gnu/libcudart.so.*; do
  # The file each soname names (libcudart.so.11.0, libcudart.so.12), not the versioned links.
  name=$(basename "$lib")
  [[ $name =~ ^libcudart\.so\.[0-9]+(\.0)?$ ]] && cp -L "$lib" "$out/$name"
done
ls "$out"
