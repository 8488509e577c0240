#!/usr/bin/env python3
"""Reads the JSON output of the driver benchmarks (driver_overhead_bench, multicast_bench) and
prints one table: each median next to its target, with PASS or FAIL.

usage: summarize.py RESULTS.json [RESULTS.json ...]

Exit status: 0 when every target that was measured is met, 1 otherwise.
"""
import json
import sys

# Median wall time per iteration, in nanoseconds.
TIME_TARGETS_NS = [
    ("BM_DeviceGetAttribute", "cuDeviceGetAttribute", 200),
    ("BM_MemGetAllocationGranularity", "cuMemGetAllocationGranularity", 200),
    ("BM_PointerGetAttribute", "cuPointerGetAttribute (VMM address)", 200),
    ("BM_MemCreateRelease", "cuMemCreate + cuMemRelease, 2 MiB", 2000),
    ("BM_ReserveMapAccessUnmapFree", "reserve+map+access+unmap+free, 2 MiB", 5000),
    ("BM_MulticastGetGranularity", "cuMulticastGetGranularity", 100),
    ("BM_MulticastSetupTeardown8/live:1", "multicast 8-GPU setup+teardown (46 calls)", 50000),
]
# Driver copies against a host memcpy of the same size measured in the same run.
MEMCPY = "BM_HostMemcpy"
COPY_TARGETS = [
    ("BM_MemcpyDtoD", "cuMemcpyDtoD, 64 MiB"),
    ("BM_MemcpyHtoD", "cuMemcpyHtoD, 64 MiB"),
    ("BM_MemcpyDtoH", "cuMemcpyDtoH, 64 MiB"),
]
MIN_COPY_RATIO = 0.5
# The same operation with 1 and with 1,000 live multicast objects, measured in the same run: the
# cost with 1,000 may exceed the cost with 1 by no more than run-to-run noise.
SCALING = [
    ("BM_MulticastCreateAddRelease", "multicast create+add+release (team of 1)"),
    ("BM_MulticastBindUnbind", "multicast bind+unbind, existing object"),
    ("BM_MulticastSetupTeardown8", "multicast 8-GPU setup+teardown"),
]
SCALING_FEW, SCALING_MANY = 1, 1000
MAX_SCALING_RATIO = 1.25

NS_PER_UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def key_of(b):
    """A benchmark's name with its arguments, without the /real_time suffix."""
    name = b.get("run_name", b["name"])
    return "/".join(part for part in name.split("/") if part != "real_time")


def medians(reports):
    """Median aggregates by benchmark name, over every report."""
    found = {}
    for report in reports:
        for b in report.get("benchmarks", []):
            key = key_of(b)
            if b.get("error_occurred"):
                found[key] = {"error": b.get("error_message", "error")}
            elif b.get("aggregate_name") == "median":
                found[key] = b
    return found


def ns_of(b):
    return b["real_time"] * NS_PER_UNIT[b.get("time_unit", "ns")]


def fmt_ns(ns):
    return f"{ns:.1f} ns" if ns < 1000 else f"{ns / 1e3:.2f} us"


def fmt_limit(ns):
    return f"{ns:g} ns" if ns < 1000 else f"{ns / 1e3:g} us"


def main(paths):
    reports = []
    for path in paths:
        with open(path) as f:
            reports.append(json.load(f))
    got = medians(reports)
    rows = []
    failed = 0

    def row(label, median, target, verdict):
        nonlocal failed
        failed += verdict == "FAIL"
        rows.append((label, median, target, verdict))

    for key, label, limit in TIME_TARGETS_NS:
        b = got.get(key)
        target = f"<= {fmt_limit(limit)}"
        if b is None:
            row(label, "not run", target, "-")
        elif "error" in b:
            row(label, b["error"], target, "FAIL")
        else:
            ns = ns_of(b)
            row(label, fmt_ns(ns), target, "PASS" if ns <= limit else "FAIL")

    reference = got.get(MEMCPY)
    ref_bw = reference.get("bytes_per_second") if reference and "error" not in reference else None
    if ref_bw or any(k in got for k, _ in COPY_TARGETS):
        row("host memcpy, 64 MiB (reference)", f"{ref_bw / 2**30:.2f} GiB/s" if ref_bw else "not run", "", "")
    for key, label in COPY_TARGETS:
        b = got.get(key)
        target = f">= {MIN_COPY_RATIO:.0%} of memcpy"
        if b is None:
            row(label, "not run", target, "-")
        elif "error" in b:
            row(label, b["error"], target, "FAIL")
        elif not ref_bw:
            row(label, f"{b['bytes_per_second'] / 2**30:.2f} GiB/s", target + " (no reference)", "-")
        else:
            ratio = b["bytes_per_second"] / ref_bw
            row(label, f"{b['bytes_per_second'] / 2**30:.2f} GiB/s ({ratio:.0%})", target,
                "PASS" if ratio >= MIN_COPY_RATIO else "FAIL")

    for key, label in SCALING:
        few = got.get(f"{key}/live:{SCALING_FEW}")
        many = got.get(f"{key}/live:{SCALING_MANY}")
        label = f"{label}, {SCALING_FEW} -> {SCALING_MANY} live"
        target = f"ratio <= {MAX_SCALING_RATIO:.2f}"
        if few is None or many is None:
            row(label, "not run", target, "-")
        elif "error" in few or "error" in many:
            row(label, (few if "error" in few else many)["error"], target, "FAIL")
        else:
            ratio = ns_of(many) / ns_of(few)
            row(label, f"{fmt_ns(ns_of(few))} -> {fmt_ns(ns_of(many))} (x{ratio:.2f})", target,
                "PASS" if ratio <= MAX_SCALING_RATIO else "FAIL")

    header = ("benchmark", "median", "target", "result")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(4)]
    for r in [header] + rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    print()
    for path, report in zip(paths, reports):
        c = report.get("context", {})
        load = ", ".join(f"{x:.2f}" for x in c.get("load_avg", [])) or "?"
        print(f"{c.get('executable', path)}: {c.get('host_name', '?')}, {c.get('num_cpus', '?')} CPUs at "
              f"{c.get('mhz_per_cpu', '?')} MHz, load average {load} at start, {c.get('date', '?')}")
    print(f"{failed} target(s) missed")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(f"usage: {sys.argv[0]} RESULTS.json [RESULTS.json ...]")
    sys.exit(main(sys.argv[1:]))
