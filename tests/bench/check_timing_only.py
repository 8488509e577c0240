#!/usr/bin/env python3
"""Timing-only is the same timing, only faster: for each algorithm, the simulated time of every
size must be the same whether the data moves or not, and whether the size runs alone or after
the others in one command.

    check_timing_only.py --algos nvls,ring --sizes 64K,1M,4M -- mcsim bench allreduce [options]

Runs, per algorithm: the sweep functional, the sweep timing-only, and each size timing-only on
its own; compares the time_us column (printed with 3 decimals, i.e. to the nanosecond) exactly.
"""
import argparse
import subprocess
import sys


def times(command):
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(command)}: exit status {run.returncode}\n{run.stdout}{run.stderr}")
    rows = [line.split() for line in run.stdout.splitlines()[1:] if line.strip()]
    return {int(r[0]): r[1] for r in rows}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--algos", required=True)
    parser.add_argument("--sizes", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    sizes = args.sizes.split(",")
    problems = []
    for algo in args.algos.split(","):
        base = command + ["--algo", algo]
        functional = times(base + ["--sizes", args.sizes])
        sweep = times(base + ["--sizes", args.sizes, "--timing-only"])
        alone = {}
        for s in sizes:
            alone.update(times(base + ["--sizes", s, "--timing-only"]))
        for size in sorted(functional):
            row = f"{algo} {size}: functional {functional[size]} us, timing-only in the sweep " \
                  f"{sweep.get(size)} us, timing-only alone {alone.get(size)} us"
            print(row)
            if not (functional[size] == sweep.get(size) == alone.get(size)):
                problems.append(row)
        if len(functional) != len(sizes):
            problems.append(f"{algo}: {len(functional)} rows for {len(sizes)} sizes")
    if problems:
        print("timing-only differs:\n  " + "\n  ".join(problems))
        return 1
    print("timing-only gives the functional times, alone and in a sweep")
    return 0


if __name__ == "__main__":
    sys.exit(main())
