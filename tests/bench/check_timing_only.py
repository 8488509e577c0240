#!/usr/bin/env python3
"""Timing-only is the same timing, only faster, and a size's figure does not depend on the sizes
run before it: for each algorithm, the simulated time of every size must be the same whether the
data moves or not, and whether the size runs alone, in a rising sweep or in a falling one.

    check_timing_only.py --algos nvls,ring --sizes 64K,1M,4M -- mcsim bench allreduce [options]

Runs, per algorithm: the sweep functional, each size functional on its own, the sweep
timing-only, the sweep timing-only from the largest size down, and each size timing-only on its
own; compares the time_us column (printed with 3 decimals, i.e. to the nanosecond) exactly.
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
        falling = times(base + ["--sizes", ",".join(reversed(sizes)), "--timing-only"])
        alone, functional_alone = {}, {}
        for s in sizes:
            alone.update(times(base + ["--sizes", s, "--timing-only"]))
            functional_alone.update(times(base + ["--sizes", s]))
        for size in sorted(functional):
            row = f"{algo} {size}: functional {functional[size]} us (alone {functional_alone.get(size)}), " \
                  f"timing-only in the sweep {sweep.get(size)} us (falling {falling.get(size)}, " \
                  f"alone {alone.get(size)})"
            print(row)
            if len({functional[size], functional_alone.get(size), sweep.get(size), falling.get(size),
                    alone.get(size)}) != 1:
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
