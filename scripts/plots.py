#!/usr/bin/env python3
"""Draws the model-against-published plots of docs/plots/ (docs/multimem.md, docs/model.md,
docs/benchmarks.md).

Runs `mcsim bench allreduce --timing-only --format plain` and the copy probe (bench/copy_bandwidth,
timing only) from BUILD_DIR, and draws:

  allreduce-hgx-h100.png     NVLS and ring bus bandwidth against size, 8x H100, with the published
                             bands (nccl-tests issue 212, nccl issue 1442)
  allreduce-gpu-count.png    NVLS bus bandwidth at 2 GiB with 5 to 8 GPUs of hgx-h100, against
                             nccl issue 1455
  allreduce-dgx-b200.png     NVLS bus bandwidth against size, 8x B200, against nccl issue 1807
  allreduce-gb200-nvl72.png  NVLS bus bandwidth against size, 72 GPUs of gb200-nvl72, against
                             coreweave/nccl-tests pull request 43 (and the model before issue 20)
  copy-calibration.png       copy bandwidth against size, hgx-h200 and hgx-h100 presets against the
                             real GPUs (docs/real-driver/)
  sim-speed-gpus.png         CPU seconds of a timing-only NVLS all-reduce against GPUs on
                             gb200-nvl72 (the table of docs/benchmarks.md, kept below; with
                             --measure-speed, measured now, which is not reproducible)

Simulated times are deterministic, the style is fixed and the PNGs carry no software or time
stamp, so the same tree draws the same files. Needs python3-matplotlib (optional dependency,
docs/dependencies.md). Usage: plots.py BUILD_DIR [--measure-speed]  (scripts/plots.sh builds it)
"""
import os
import resource
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "docs", "plots")
sys.path.insert(0, os.path.join(REPO, "bench"))
import calibrate  # noqa: E402  (the copy probe's parser and the real figures' files)

MiB = 1 << 20
GiB = 1 << 30

# Published figures (docs/multimem.md says where each comes from).
H100_NVLS = 480.0                      # nccl-tests issue 212, nccl issue 1442
H100_RING = (365.0, 370.0)             # same sources
H100_GPU_COUNT = {5: 420.0, 6: 440.0, 7: 460.0, 8: 480.0}  # nccl issue 1455, 2 GiB
B200_NVLS = 830.0                      # nccl issue 1807: "830+", size not stated
NVL72_NVLS = {512 * MiB: 586.06, GiB: 681.17, 2 * GiB: 757.78, 4 * GiB: 839.16, 8 * GiB: 834.57}
# coreweave/nccl-tests pull request 43, out-of-place busbw; the model before issue 20's NVLS
# pipeline (docs/multimem.md, 2026-11-29):
NVL72_BEFORE = {512 * MiB: 1081.0, GiB: 1087.0, 2 * GiB: 1090.0, 4 * GiB: 1092.0}
# CPU seconds per timing-only NVLS all-reduce on gb200-nvl72 (docs/benchmarks.md, measured
# 2026-11-29 with NCCL's pipeline fill and drain by `plots.py BUILD --measure-speed`).
SPEED_TABLE = {
    64 * MiB: {8: 0.01, 16: 0.01, 36: 0.03, 72: 0.07},
    256 * MiB: {8: 0.02, 16: 0.04, 36: 0.10, 72: 0.27},
    GiB: {8: 0.06, 16: 0.13, 36: 0.37, 72: 0.85},
    4 * GiB: {8: 0.23, 16: 0.49, 36: 1.30, 72: 2.92},
}


def bench(build, topology, gpus, algo, sizes, iters=1):
    """{bytes: (time_us, busbw)} from one `mcsim bench allreduce` process."""
    cmd = [os.path.join(build, "bin", "mcsim"), "bench", "allreduce", "--topology", topology,
           "--gpus", str(gpus), "--algo", algo, "--sizes", ",".join(str(s) for s in sizes),
           "--iters", str(iters), "--timing-only", "--format", "plain"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[0].isdigit():
            rows[int(f[0])] = (float(f[1]), float(f[3]))
    return rows


def mib(b):
    return b / MiB


def setup():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.style.use("default")
    plt.rcParams.update({"font.size": 8, "figure.dpi": 90, "savefig.dpi": 90,
                         "path.simplify": True, "svg.hashsalt": "mcsim"})
    return plt


def save(plt, fig, name):
    fig.tight_layout()
    path = os.path.join(OUT, name)
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    print(f"wrote {os.path.relpath(path, REPO)} ({os.path.getsize(path) // 1024} KiB)")


def ratio_labels(ax, xs, model, published):
    for x, m, p in zip(xs, model, published):
        ax.annotate(f"{m / p:.2f}", (x, m), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7)


def h100(plt, build):
    sizes = [s * MiB for s in (64, 256, 1024, 2048, 4096)]
    nvls = bench(build, "hgx-h100", 8, "nvls", sizes)
    ring = bench(build, "hgx-h100", 8, "ring", sizes)
    fig, ax = plt.subplots(figsize=(6.4, 4))
    xs = [mib(s) for s in sizes]
    ax.plot(xs, [nvls[s][1] for s in sizes], "o-", color="C0", label="NVLS: mcsim")
    ax.axhline(H100_NVLS, color="C0", ls="--", lw=1, label="NVLS: published (~480)")
    ax.plot(xs, [ring[s][1] for s in sizes], "s-", color="C1", label="ring: mcsim")
    ax.axhspan(*H100_RING, color="C1", alpha=0.25, label="ring: published (365-370)")
    ax.axvline(256, color="grey", ls=":", lw=1)
    ax.set(xscale="log", xlabel="bytes per GPU (MiB)", ylabel="bus bandwidth (GB/s)", ylim=(0, 560),
           title="hgx-h100, 8 GPUs: all-reduce bus bandwidth (target within 5% from 256 MiB)")
    ax.set_xticks(xs, [f"{int(x)}" for x in xs])
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    save(plt, fig, "allreduce-hgx-h100.png")
    return nvls, ring


def gpu_count(plt, build):
    counts = sorted(H100_GPU_COUNT)
    model = [bench(build, "hgx-h100", n, "nvls", [2 * GiB])[2 * GiB][1] for n in counts]
    pub = [H100_GPU_COUNT[n] for n in counts]
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ax.plot(counts, pub, "o-", color="C2", label="published (nccl issue 1455)")
    ax.plot(counts, model, "x--", color="C0", label="mcsim")
    ratio_labels(ax, counts, model, pub)
    ax.set(xlabel="GPUs in the team", ylabel="bus bandwidth (GB/s)", ylim=(300, 540), xticks=counts,
           title="hgx-h100: NVLS all-reduce of 2 GiB against the team size (labels: mcsim / published)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    save(plt, fig, "allreduce-gpu-count.png")
    return dict(zip(counts, model))


def b200(plt, build):
    sizes = [s * MiB for s in (64, 256, 1024, 4096)]
    nvls = bench(build, "dgx-b200", 8, "nvls", sizes)
    fig, ax = plt.subplots(figsize=(6.4, 4))
    xs = [mib(s) for s in sizes]
    ax.plot(xs, [nvls[s][1] for s in sizes], "o-", color="C0", label="NVLS: mcsim")
    ax.axhline(B200_NVLS, color="C2", ls="--", lw=1, label="NVLS: published peak, size not stated (nccl issue 1807)")
    ax.set(xscale="log", xlabel="bytes per GPU (MiB)", ylabel="bus bandwidth (GB/s)", ylim=(0, 1100),
           title="dgx-b200, 8 GPUs: NVLS all-reduce bus bandwidth (prediction, not fitted)")
    ax.set_xticks(xs, [f"{int(x)}" for x in xs])
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    save(plt, fig, "allreduce-dgx-b200.png")
    return nvls


def nvl72(plt, build):
    sizes = sorted(NVL72_NVLS)
    nvls = bench(build, "gb200-nvl72", 72, "nvls", sizes)
    fig, ax = plt.subplots(figsize=(6.4, 4))
    xs = [mib(s) for s in sizes]
    pub = [NVL72_NVLS[s] for s in sizes]
    model = [nvls[s][1] for s in sizes]
    ax.plot(xs, pub, "o-", color="C2", label="published (coreweave/nccl-tests PR 43)")
    ax.plot(xs, model, "x--", color="C0", label="mcsim")
    before = sorted(NVL72_BEFORE)
    ax.plot([mib(s) for s in before], [NVL72_BEFORE[s] for s in before], ":", color="grey",
            label="mcsim before issue 20's NVLS pipeline")
    ratio_labels(ax, xs, model, pub)
    ax.set(xscale="log", xlabel="bytes per GPU (MiB)", ylabel="bus bandwidth (GB/s)", ylim=(0, 1250),
           title="gb200-nvl72, 72 GPUs: NVLS all-reduce (prediction; labels: mcsim / published)")
    ax.set_xticks(xs, [f"{int(x)}" for x in xs])
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    save(plt, fig, "allreduce-gb200-nvl72.png")
    return nvls


def copies(plt, build):
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    for ax, real_path, preset, kinds, title in (
            (axes[0], calibrate.REAL_H200, "hgx-h200", ["dtod", "peer_0to1", "peer_bidir"], "hgx-h200 against a real H200 pair"),
            (axes[1], calibrate.REAL_H100, "hgx-h100", ["dtod", "htod_pinned", "htod_pageable"], "hgx-h100 against a real H100")):
        real = calibrate.parse(open(real_path).read())
        sim = calibrate.simulate(build, preset)
        for i, kind in enumerate(kinds):
            keys = sorted(k for k in real if k[0] == kind and k in sim)
            x = [k[1] / MiB for k in keys]
            ax.plot(x, [real[k] for k in keys], "o-", color=f"C{i}", label=f"{calibrate.LABELS[kind]}: measured")
            ax.plot(x, [sim[k] for k in keys], "x--", color=f"C{i}", label=f"{calibrate.LABELS[kind]}: mcsim")
        ax.set(xscale="log", yscale="log", xlabel="copy size (MiB)", ylabel="bandwidth one way (GB/s)", title=title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    save(plt, fig, "copy-calibration.png")


def measure_speed(build):
    table = {}
    for size in sorted(SPEED_TABLE):
        table[size] = {}
        for n in (8, 16, 36, 72):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            bench(build, "gb200-nvl72", n, "nvls", [size])
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            table[size][n] = cpu / 2  # a warm-up and a timed all-reduce
            print(f"speed: {n} GPUs, {size // MiB} MiB: {table[size][n]:.2f} s CPU per all-reduce")
    return table


def speed(plt, table):
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for i, size in enumerate(sorted(table)):
        ns = sorted(table[size])
        ax.plot(ns, [table[size][n] for n in ns], "o-", color=f"C{i}", label=f"{size // MiB} MiB")
    ax.axhline(2.0, color="red", ls="--", lw=1, label="target for 1 GiB on 72 GPUs (2 s)")
    ax.set(xscale="log", yscale="log", xlabel="GPUs", ylabel="CPU seconds per all-reduce",
           title="gb200-nvl72: cost of simulating a timing-only NVLS all-reduce")
    ax.set_xticks([8, 16, 36, 72], ["8", "16", "36", "72"])
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left")
    save(plt, fig, "sim-speed-gpus.png")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    build = args[0] if args else os.path.join(REPO, "build-release")
    try:
        plt = setup()
    except ImportError:
        print("plots.py needs matplotlib: apt-get install python3-matplotlib (docs/dependencies.md)")
        return 1
    os.makedirs(OUT, exist_ok=True)
    nvls, ring = h100(plt, build)
    for s in sorted(nvls):
        print(f"hgx-h100 8: {s // MiB} MiB nvls {nvls[s][1]:.0f} ({nvls[s][1] / H100_NVLS:.3f}) "
              f"ring {ring[s][1]:.0f} ({ring[s][1] / 367.5:.3f})")
    for n, v in gpu_count(plt, build).items():
        print(f"hgx-h100 {n}: 2 GiB nvls {v:.0f} ({v / H100_GPU_COUNT[n]:.3f})")
    for s, (t, bw) in sorted(b200(plt, build).items()):
        print(f"dgx-b200 8: {s // MiB} MiB nvls {t:.0f} us {bw:.0f}" + (f" ({bw / B200_NVLS:.3f})" if s == 4 * GiB else ""))
    for s, (t, bw) in sorted(nvl72(plt, build).items()):
        print(f"gb200-nvl72 72: {s // MiB} MiB nvls {t:.0f} us {bw:.0f} ({bw / NVL72_NVLS[s]:.3f})")
    copies(plt, build)
    speed(plt, measure_speed(build) if "--measure-speed" in sys.argv else SPEED_TABLE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
