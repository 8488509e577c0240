#!/usr/bin/env python3
"""Runs an all-reduce benchmark command and checks its exit status and its nccl-tests table.

    check_allreduce.py --gpus N --bytes 65536,1048576 -- mcsim bench allreduce ...

Passes when the command exits 0 and its stdout is nccl-tests' all_reduce_perf layout (NVIDIA's
nccl-tests, src/common.cu): the "# nThread 1 nGpus N ..." line, "# Using devices" and one line per
rank, the three heading lines, one row per expected size in order, "# Out of bounds values : 0 OK",
"# Avg bus bandwidth    : B" and "#". A row is `size count type redop root` and two halves of
`time algbw busbw #wrong`, out-of-place then in-place: the half the algorithm runs (oneshot out of
place, the others in place) has time > 0, algbw = bytes / time (GB = 1e9 bytes), busbw = algbw *
2(n-1)/n and #wrong 0 with a check (N/A without), within the rounding of the printed figures; the
other half reads N/A. B is the mean busbw of the measured halves.
"""
import argparse
import math
import subprocess
import sys

WORD_BYTES = {"half": 2, "bfloat16": 2, "double": 8, "uint64": 8}


def close(a, b, decimals_error):
    # Figures are printed with 2 decimals: allow for that rounding and a relative 0.1%.
    return abs(a - b) <= decimals_error + 1e-3 * max(abs(a), abs(b))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, required=True)
    parser.add_argument("--bytes", required=True, help="the sizes the rows must have, comma separated")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    expected = [int(b) for b in args.bytes.split(",")]
    checked = "--check" in command or ["-c", "1"] in [command[i:i + 2] for i in range(len(command))]
    out_of_place = "oneshot" in command

    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sys.stdout.write(run.stdout)
    sys.stdout.write(run.stderr)
    problems = []
    if run.returncode != 0:
        problems.append(f"exit status {run.returncode}, expected 0")
    lines = run.stdout.splitlines()
    n = args.gpus
    head = [l for l in lines if l.startswith("#")]
    rows = [l for l in lines if l.strip() and not l.startswith("#")]
    if not head or not head[0].startswith(f"# nThread 1 nGpus {n} "):
        problems.append(f"the first line is not '# nThread 1 nGpus {n} ...'")
    ranks = [l for l in head if l.startswith("#  Rank ")]
    if len(ranks) != n:
        problems.append(f"{len(ranks)} '#  Rank' lines, expected {n}")
    if not any(l.split() == ["#", "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                             "algbw", "busbw", "#wrong"] for l in head):
        problems.append("no column heading line")
    if len(rows) != len(expected):
        problems.append(f"{len(rows)} rows, expected {len(expected)}")
    busbws = []
    for row, size in zip(rows, expected):
        f = row.split()
        if len(f) != 13:
            problems.append(f"row '{row}' has {len(f)} fields, not 13")
            continue
        measured, absent = (f[5:9], f[9:13]) if out_of_place else (f[9:13], f[5:9])
        if absent != ["N/A"] * 4:
            problems.append(f"row '{row}': the half not measured is not N/A")
        if int(f[0]) != size or f[3] != "sum" or f[4] != "-1":
            problems.append(f"row '{row}': expected {size} bytes, sum, root -1")
        if int(f[1]) != size // WORD_BYTES.get(f[2], 4):
            problems.append(f"row '{row}': count is not bytes / the size of a {f[2]}")
        try:
            time_us, algbw, busbw = (float(v) for v in measured[:3])
        except ValueError:
            problems.append(f"row '{row}': time, algbw and busbw are not numbers")
            continue
        if not all(math.isfinite(v) for v in (time_us, algbw, busbw)) or time_us <= 0:
            problems.append(f"row '{row}': time, algbw or busbw not finite, or time not positive")
            continue
        if measured[3] != ("0" if checked else "N/A"):
            problems.append(f"row '{row}': #wrong is {measured[3]}, expected {'0' if checked else 'N/A'}")
        time_rounding = 0.5 if time_us >= 10000 else 0.05 if time_us >= 100 else 0.005
        if not close(algbw, size / (time_us * 1e3), 0.005 + algbw * time_rounding / time_us):
            problems.append(f"row '{row}': algbw is not bytes / time")
        if not close(busbw, algbw * 2 * (n - 1) / n, 0.01):
            problems.append(f"row '{row}': busbw is not algbw * 2(n-1)/n for n = {n}")
        busbws.append(busbw)
    if "# Out of bounds values : 0 OK" not in head:
        problems.append("no '# Out of bounds values : 0 OK' line")
    avg = [l for l in head if l.startswith("# Avg bus bandwidth    : ")]
    if len(avg) != 1 or not busbws or not close(float(avg[0].split(":")[1]), sum(busbws) / len(busbws), 0.01):
        problems.append(f"the average bus bandwidth line is not the mean busbw: {avg}")
    if head[-1:] != ["#"]:
        problems.append("the table does not end with '#'")
    for p in problems:
        print(f"check_allreduce: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
