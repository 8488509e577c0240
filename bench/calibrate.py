#!/usr/bin/env python3
"""Compares mcsim's copy model with real measurements (docs/model.md, "Calibration").

Runs the copy probe (tools/probe/copy_bandwidth.cpp, built against mcsim as bench/copy_bandwidth)
on the H200 and H100 presets in timing-only mode, reads the real figures from docs/real-driver/,
prints a markdown table of modelled against measured bandwidth, and, when matplotlib is present,
draws docs/img/calibration-h200.png and docs/img/calibration-h100.png. Exit status 1 when a
calibration target is missed: H200 device-to-device and peer copies (4 MiB to 1 GiB) within 10% of
the real H200 pair; H100 peer copies within 10% of the published p2pBandwidthLatencyTest figures.

Usage: calibrate.py BUILD_DIR   (bench/calibrate.sh builds Release and calls it)
"""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL_H200 = os.path.join(REPO, "docs/real-driver/h200x2-copy-bandwidth-2026-11-20.txt")
REAL_H100 = os.path.join(REPO, "docs/real-driver/h100-copy-bandwidth-2026-11-21.txt")
# nccl issue 1264 (shared/reference/hardware.md): HGX H100 p2pBandwidthLatencyTest, GB/s.
PUBLISHED_H100_PEER = (371.0, 377.0)
PUBLISHED_H100_BIDIR_TOTAL = 783.0
LINE = re.compile(r"bw\.(\S+)\.(\d+) = (\S+) ms (\S+) GB/s")
LABELS = {
    "dtod": "device to device",
    "peer_0to1": "peer 0->1 (pushed)",
    "peer_1to0_on_0": "peer 1->0 (pulled by 0)",
    "peer_bidir": "peer, both ways at once (each way)",
    "htod_pinned": "host to device, pinned",
    "dtoh_pinned": "device to host, pinned",
    "htod_pageable": "host to device, pageable",
    "dtoh_pageable": "device to host, pageable",
}


def parse(text):
    out = {}
    for m in LINE.finditer(text):
        out[(m.group(1), int(m.group(2)))] = float(m.group(4))
    return out


def simulate(build, preset):
    env = dict(os.environ, MCSIM_TOPOLOGY=preset, MCSIM_TIMING_ONLY="1")
    exe = os.path.join(build, "bench", "copy_bandwidth")
    return parse(subprocess.run([exe], env=env, check=True, capture_output=True, text=True).stdout)


def table(title, real, sim, kinds):
    print(f"\n### {title}\n")
    print("| copy | size | measured GB/s | modelled GB/s | modelled / measured |")
    print("|---|---|---|---|---|")
    for kind in kinds:
        for key in sorted(k for k in real if k[0] == kind):
            if key in sim:
                print(f"| {LABELS[kind]} | {key[1] >> 20} MiB | {real[key]:.0f} | {sim[key]:.0f} | {sim[key] / real[key]:.3f} |")


def plot(path, title, real, sim, kinds, extra=None):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"(matplotlib missing: {path} not drawn)")
        return
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, kind in enumerate(kinds):
        keys = sorted(k for k in real if k[0] == kind and k in sim)
        if not keys:
            continue
        xs = [k[1] / 2**20 for k in keys]
        color = f"C{i}"
        ax.plot(xs, [real[k] for k in keys], "o-", color=color, label=f"{LABELS[kind]}: measured")
        ax.plot(xs, [sim[k] for k in keys], "x--", color=color, label=f"{LABELS[kind]}: mcsim")
    if extra:
        extra(ax)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("copy size (MiB)")
    ax.set_ylabel("bandwidth one way (GB/s)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {os.path.relpath(path, REPO)}")


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "build-release")
    missed = []
    real200 = parse(open(REAL_H200).read())
    sim200 = simulate(build, "hgx-h200")
    kinds200 = ["dtod", "peer_0to1", "peer_1to0_on_0", "peer_bidir"]
    table("8x H200 preset against a real H200 pair (2026-11-20)", real200, sim200, kinds200)
    for key, v in real200.items():
        if key[0] in ("dtod", "peer_0to1") and abs(sim200[key] / v - 1) > 0.10:
            missed.append(f"H200 {key[0]} {key[1] >> 20} MiB: {sim200[key]:.0f} vs {v:.0f} GB/s")
    plot(os.path.join(REPO, "docs/img/calibration-h200.png"), "hgx-h200 preset against a real H200 pair",
         real200, sim200, kinds200)

    real100 = parse(open(REAL_H100).read())
    sim100 = simulate(build, "hgx-h100")
    kinds100 = ["dtod", "htod_pinned", "dtoh_pinned", "htod_pageable", "dtoh_pageable"]
    table("8x H100 preset against a real H100 (2026-11-21)", real100, sim100, kinds100)
    peer = sim100[("peer_0to1", 1 << 30)]
    bidir = 2 * sim100[("peer_bidir", 1 << 30)]
    lo, hi = PUBLISHED_H100_PEER
    print(f"\n### 8x H100 preset against published peer figures (nccl issue 1264)\n")
    print("| copy | published GB/s | modelled GB/s (1 GiB) | modelled / published |")
    print("|---|---|---|---|")
    print(f"| peer one way | {lo:.0f}-{hi:.0f} | {peer:.0f} | {peer / hi:.3f}-{peer / lo:.3f} |")
    print(f"| peer both ways (sum) | {PUBLISHED_H100_BIDIR_TOTAL:.0f} | {bidir:.0f} | {bidir / PUBLISHED_H100_BIDIR_TOTAL:.3f} |")
    if not (0.9 * lo <= peer <= 1.1 * hi):
        missed.append(f"H100 peer {peer:.0f} GB/s vs published {lo:.0f}-{hi:.0f}")
    if abs(bidir / PUBLISHED_H100_BIDIR_TOTAL - 1) > 0.10:
        missed.append(f"H100 bidirectional {bidir:.0f} GB/s vs published {PUBLISHED_H100_BIDIR_TOTAL:.0f}")

    def published(ax):
        ax.axhspan(lo, hi, color="C5", alpha=0.3, label="peer one way: published (371-377 GB/s)")
        keys = sorted(k for k in sim100 if k[0] == "peer_0to1")
        ax.plot([k[1] / 2**20 for k in keys], [sim100[k] for k in keys], "x--", color="C5", label="peer 0->1: mcsim")

    plot(os.path.join(REPO, "docs/img/calibration-h100.png"), "hgx-h100 preset against a real H100 and published peer figures",
         real100, sim100, kinds100, published)
    print()
    if missed:
        print("calibration targets missed:\n  " + "\n  ".join(missed))
        return 1
    print("every calibration target is met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
