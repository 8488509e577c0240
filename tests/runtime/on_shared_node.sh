#!/bin/sh
# Runs a program attached to a shared node of its own (docs/multiprocess.md), as a process of a
# multi-process job would be: starts the node, runs the program with MCSIM_NODE set, stops the
# node, and exits with the program's status.
#   on_shared_node.sh MCSIM_BINARY PROGRAM [ARGS...]
# ON_SHARED_NODE_OPTIONS (split at spaces) goes to `mcsim node start`: `--topology gb200-nvl72`.
set -u
mcsim=$1
shift
dir=$(mktemp -d /tmp/mcsim-rt-XXXXXX) || exit 1
chmod 700 "$dir"
name=rt$$
export MCSIM_NODE_DIR="$dir"
# shellcheck disable=SC2086
if ! "$mcsim" node start --name "$name" --segment-mib 256 --exit-with $$ ${ON_SHARED_NODE_OPTIONS:-} >"$dir/start.out" 2>&1; then
  cat "$dir/start.out"
  rm -rf "$dir"
  exit 1
fi
MCSIM_NODE=$name "$@"
status=$?
"$mcsim" node stop --name "$name" >/dev/null 2>&1
rm -rf "$dir"
exit $status
