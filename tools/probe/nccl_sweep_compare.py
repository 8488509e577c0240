#!/usr/bin/env python3
"""Compares two NCCL sweeps of tests/nccl/nccl_allreduce (a real node's and mcsim's): lines
`# <config> count <floats>` followed by the program's `... (rank 0: T us)` lines. For each
configuration and size present in both: the median of the runs after the first (which includes
NCCL's connection set-up), mcsim / real, and the bus bandwidth of each (for N = 2 ranks the ring's
busbw equals bytes / time). Lines after `# init` are left alone (NCCL's INFO output).

    nccl_sweep_compare.py REAL.txt SIM.txt"""
import re
import statistics
import sys


def read(path):
    cur, runs = None, {}
    with open(path) as f:
        for line in f:
            if line.startswith("# init"):
                break
            m = re.match(r"# (.*) count (\d+)", line)
            if m:
                cur = (m.group(1), int(m.group(2)))
                runs.setdefault(cur, [])
                continue
            m = re.search(r"rank 0: ([0-9.]+) us", line)
            if m and cur:
                runs[cur].append(float(m.group(1)))
    return {k: statistics.median(v[1:]) for k, v in runs.items() if len(v) > 1}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    real, sim = read(sys.argv[1]), read(sys.argv[2])
    print("| bytes a rank | configuration | real (us) | mcsim (us) | mcsim / real | busbw real / mcsim (GB/s) |")
    print("|---|---|---|---|---|---|")
    for key in sorted(set(real) & set(sim), key=lambda k: (k[1], k[0])):
        config, floats = key
        b = floats * 4
        print(f"| {b >> 20} MiB | {config} | {real[key]:.1f} | {sim[key]:.1f} | {sim[key] / real[key]:.2f} | "
              f"{b / real[key] / 1e3:.1f} / {b / sim[key] / 1e3:.1f} |")


if __name__ == "__main__":
    main()
