#!/bin/bash
# Runs a command and checks its output (stdout and stderr together) line by line, in no order:
# every `--expect REGEX` must match some line, no `--reject REGEX` any line (grep -E). The
# program's stdout is buffered and its stderr (mcsim's reports) is not, so their lines interleave
# differently from run to run: the checks do not depend on the order. `--status N`: the command
# must exit with status N. Prints the output and what failed; exit status 0 when every check holds.
#   expect_lines.sh --status 0 --expect 'correct' --reject 'FAILED' -- CMD ARGS...
set -u
expect=() reject=() want=''
while [ $# -gt 0 ]; do
  case "$1" in
    --expect) expect+=("$2"); shift 2 ;;
    --reject) reject+=("$2"); shift 2 ;;
    --status) want="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "expect_lines.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out"
echo "expect_lines.sh: the command exited with status $status"
bad=0
if [ -n "$want" ] && [ "$status" != "$want" ]; then echo "expect_lines.sh: expected exit status $want"; bad=1; fi
for r in "${expect[@]}"; do
  if ! grep -qE -- "$r" <<<"$out"; then echo "expect_lines.sh: no line matches '$r'"; bad=1; fi
done
for r in "${reject[@]}"; do
  if grep -qE -- "$r" <<<"$out"; then echo "expect_lines.sh: a line matches '$r'"; bad=1; fi
done
exit $bad
