#!/bin/sh
# Runs a program twice and fails unless both runs succeed and print the same (on mcsim a run's
# results and simulated times are the same on every run: docs/ptx.md, "Determinism").
#   same_twice.sh PROGRAM [ARGS...]
set -u
first=$("$@") || { echo "first run failed:"; echo "$first"; exit 1; }
second=$("$@") || { echo "second run failed:"; echo "$second"; exit 1; }
echo "$first"
if [ "$first" != "$second" ]; then
  echo "FAIL: the second run printed otherwise:"
  echo "$second"
  exit 1
fi
