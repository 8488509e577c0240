#!/bin/sh
# Runs a program attached to a shared node of its own (docs/multiprocess.md), as a process of a
# multi-process job would be: starts the node, runs the program with MCSIM_NODE set, stops the
# node, and exits with the program's status.
#   on_shared_node.sh MCSIM_BINARY PROGRAM [ARGS...]
set -u
mcsim=$1
shift
dir=$(mktemp -d /tmp/mcsim-rt-XXXXXX) || exit 1
chmod 700 "$dir"
name=rt$$
export MCSIM_NODE_DIR="$dir"
if ! "$mcsim" node start --name "$name" --segment-mib 256 --exit-with $$ >"$dir/start.out" 2>&1; then
  cat "$dir/start.out"
  rm -rf "$dir"
  exit 1
fi
MCSIM_NODE=$name "$@"
status=$?
"$mcsim" node stop --name "$name" >/dev/null 2>&1
rm -rf "$dir"
exit $status
