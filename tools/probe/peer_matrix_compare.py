#!/usr/bin/env python3
"""Compares two outputs of tools/probe/peer_matrix (a real node's and mcsim's, say): for each mode
and size, the real and simulated times (median over the GPU pairs) and the error, the spread of
errors over the pairs, and the worst cell.

    peer_matrix_compare.py REAL.txt SIM.txt [--min-bytes N]

Cells below --min-bytes (default 0) are listed but left out of the worst cell."""
import argparse
import re
import statistics
import sys

LINE = re.compile(r"^pm\.(\w+)\.(\d+)-(\d+)\.(\d+) = ([0-9.]+) ms")


def read(path):
    cells = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = LINE.match(line)
            if m:
                mode, i, j, size, ms = m.groups()
                cells[(mode, int(i), int(j), int(size))] = float(ms)
    if not cells:
        sys.exit(f"{path}: no pm.* lines")
    return cells


def size_text(b):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale:
            return f"{b // scale} {unit}"
    return f"{b} B"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("real")
    ap.add_argument("sim")
    ap.add_argument("--min-bytes", type=int, default=0)
    a = ap.parse_args()
    real, sim = read(a.real), read(a.sim)
    common = sorted(set(real) & set(sim))
    order = ["ce", "bidir", "push", "pull", "bipush", "ce_off", "reduce", "xwait"]
    modes = sorted({k[0] for k in common}, key=lambda m: (order.index(m) if m in order else len(order), m))
    worst = None
    print("| mode | bytes | real (us, median of pairs) | mcsim (us) | mcsim / real | pairs' range |")
    print("|---|---|---|---|---|---|")
    for mode in modes:
        for size in sorted({k[3] for k in common if k[0] == mode}):
            keys = [k for k in common if k[0] == mode and k[3] == size]
            ratios = [sim[k] / real[k] for k in keys]
            r_med = statistics.median(real[k] for k in keys) * 1000
            s_med = statistics.median(sim[k] for k in keys) * 1000
            print(f"| {mode} | {size_text(size)} | {r_med:.1f} | {s_med:.1f} | {s_med / r_med:.2f} |"
                  f" {min(ratios):.2f}-{max(ratios):.2f} |")
            if size >= a.min_bytes:
                for k, r in zip(keys, ratios):
                    if worst is None or abs(r - 1) > abs(worst[1] - 1):
                        worst = (k, r)
    if worst:
        (mode, i, j, size), r = worst
        print(f"\nworst cell from {size_text(a.min_bytes)}: {mode} {i}->{j} {size_text(size)}: mcsim / real {r:.2f}"
              f" ({real[worst[0]] * 1000:.1f} us real, {sim[worst[0]] * 1000:.1f} us mcsim)")


if __name__ == "__main__":
    main()
