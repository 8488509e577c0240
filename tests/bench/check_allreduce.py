#!/usr/bin/env python3
"""Runs an all-reduce benchmark command and checks its exit status and its table.

    check_allreduce.py --gpus N --bytes 65536,1048576 -- mcsim bench allreduce ...

Passes when the command exits 0 and its stdout is the header `bytes time_us algbw_GBps
busbw_GBps` followed by one row per expected size, in order, each of four finite numbers with
time_us > 0, algbw = bytes / time (GB = 1e9 bytes) and busbw = algbw * 2(n-1)/n (nccl-tests'
definitions), within the rounding of the printed figures.
"""
import argparse
import math
import subprocess
import sys

HEADER = ["bytes", "time_us", "algbw_GBps", "busbw_GBps"]


def close(a, b, decimals_error):
    # Figures are printed with 3 decimals: allow for that rounding and a relative 0.1%.
    return abs(a - b) <= decimals_error + 1e-3 * max(abs(a), abs(b))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, required=True)
    parser.add_argument("--bytes", required=True, help="the sizes the rows must have, comma separated")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    expected = [int(b) for b in args.bytes.split(",")]

    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sys.stdout.write(run.stdout)
    sys.stdout.write(run.stderr)
    problems = []
    if run.returncode != 0:
        problems.append(f"exit status {run.returncode}, expected 0")
    lines = run.stdout.splitlines()
    if not lines or lines[0].split() != HEADER:
        problems.append(f"the first line is not the header '{' '.join(HEADER)}'")
    rows = lines[1:]
    if len(rows) != len(expected):
        problems.append(f"{len(rows)} rows, expected {len(expected)}")
    n = args.gpus
    for row, size in zip(rows, expected):
        fields = row.split()
        try:
            values = [float(f) for f in fields]
        except ValueError:
            values = []
        if len(fields) != 4 or len(values) != 4 or not all(math.isfinite(v) for v in values):
            problems.append(f"row '{row}' is not four finite numbers")
            continue
        nbytes, time_us, algbw, busbw = values
        if nbytes != size:
            problems.append(f"row '{row}': {nbytes:.0f} bytes, expected {size}")
        if time_us <= 0:
            problems.append(f"row '{row}': time_us is not positive")
            continue
        if not close(algbw, nbytes / (time_us * 1e3), 0.0015):
            problems.append(f"row '{row}': algbw is not bytes / time")
        if not close(busbw, algbw * 2 * (n - 1) / n, 0.002 * 2 * (n - 1) / n + 0.0005):
            problems.append(f"row '{row}': busbw is not algbw * 2(n-1)/n for n = {n}")
    for p in problems:
        print(f"check_allreduce: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
