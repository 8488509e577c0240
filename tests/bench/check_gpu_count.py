#!/usr/bin/env python3
"""NVLS bus bandwidth rises with the number of GPUs in the team, as published runs show
(docs/multimem.md, "GPU count"): each GPU's operands go through its own ports' share of the
switches' reduction, so a smaller team reduces no faster per GPU, and busbw = algbw x 2(n-1)/n.

    check_gpu_count.py --gpus 5,6,7,8 -- mcsim bench allreduce [options]

Runs the command once per GPU count and checks that busbw rises strictly from each count to the
next, and that the algorithm bandwidth of the smallest team is not above the largest's by more
than 1%: NCCL's NVLS pipeline fill and drain (one iteration of channels x heads x chunk bytes each
way, launch_shapes.h) grow with the team, which costs a larger team a little at a fixed size
(0.2% at 2 GiB from 5 to 8 GPUs of hgx-h100).
"""
import argparse
import subprocess
import sys


def row(command):
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(command)}: exit status {run.returncode}\n{run.stdout}{run.stderr}")
    fields = run.stdout.splitlines()[-1].split()
    return float(fields[2]), float(fields[3])  # algbw, busbw


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    counts = [int(n) for n in args.gpus.split(",")]
    rows = {n: row(command + ["--gpus", str(n)]) for n in counts}
    for n in counts:
        print(f"{n} GPUs: algbw {rows[n][0]:.1f} GB/s, busbw {rows[n][1]:.1f} GB/s")
    ok = all(rows[a][1] < rows[b][1] for a, b in zip(counts, counts[1:]))
    ok = ok and rows[counts[0]][0] <= rows[counts[-1]][0] * 1.01
    print("busbw rises with the number of GPUs" if ok else "busbw does not rise with the number of GPUs")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
