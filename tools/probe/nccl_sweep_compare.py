#!/usr/bin/env python3
"""Compares two NCCL sweeps of tests/nccl/nccl_allreduce (a real node's and mcsim's): lines
`# <config> count <floats>` followed by the program's `... (rank 0: T us)` lines (of one
collective or several: all-reduce, or the one the line names). For each configuration, size and
collective present in both: the median of the runs after the first (which includes
NCCL's connection set-up), mcsim / real, and bytes a rank / time (for an all-reduce of 2 ranks,
the bus bandwidth). Lines after `# init` are left alone (NCCL's INFO output).

    nccl_sweep_compare.py REAL.txt SIM.txt"""
import re
import statistics
import sys

from peer_matrix_compare import size_text


def read(path):
    cur, runs = None, {}
    with open(path) as f:
        for line in f:
            if line.startswith("# init"):
                break
            m = re.match(r"# (.*) count (\d+)", line)
            if m:
                cur = (m.group(1), int(m.group(2)))
                continue
            m = re.search(r"floats( (allgather|reducescatter|broadcast))?: correct \(rank 0: ([0-9.]+) us", line)
            if m and cur:
                runs.setdefault(cur + (m.group(2) or "allreduce",), []).append(float(m.group(3)))
    return {k: statistics.median(v[1:]) for k, v in runs.items() if len(v) > 1}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    real, sim = read(sys.argv[1]), read(sys.argv[2])
    print("| bytes a rank | configuration | collective | real (us) | mcsim (us) | mcsim / real | bytes / time, real / mcsim (GB/s) |")
    print("|---|---|---|---|---|---|---|")
    for key in sorted(set(real) & set(sim), key=lambda k: (k[0], k[2], k[1])):
        config, floats, coll = key
        b = floats * 4
        print(f"| {size_text(b)} | {config} | {coll} | {real[key]:.1f} | {sim[key]:.1f} | {sim[key] / real[key]:.2f} | "
              f"{b / real[key] / 1e3:.1f} / {b / sim[key] / 1e3:.1f} |")


if __name__ == "__main__":
    main()
