#!/usr/bin/env python3
"""Reads driver_overhead_bench's JSON output and prints each median next to its target.

Exit status: 0 when every target that was measured is met, 1 otherwise.
"""
import json
import sys

# Median wall time per call, in nanoseconds.
TIME_TARGETS_NS = [
    ("BM_DeviceGetAttribute", "cuDeviceGetAttribute", 200),
    ("BM_MemGetAllocationGranularity", "cuMemGetAllocationGranularity", 200),
    ("BM_PointerGetAttribute", "cuPointerGetAttribute (VMM address)", 200),
    ("BM_MemCreateRelease", "cuMemCreate + cuMemRelease, 2 MiB", 2000),
    ("BM_ReserveMapAccessUnmapFree", "reserve+map+access+unmap+free, 2 MiB", 5000),
]
# Driver copies against a host memcpy of the same size measured in the same run.
MEMCPY = "BM_HostMemcpy"
COPY_TARGETS = [
    ("BM_MemcpyDtoD", "cuMemcpyDtoD, 64 MiB"),
    ("BM_MemcpyHtoD", "cuMemcpyHtoD, 64 MiB"),
    ("BM_MemcpyDtoH", "cuMemcpyDtoH, 64 MiB"),
]
MIN_COPY_RATIO = 0.5

NS_PER_UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def medians(report):
    """Median aggregates by benchmark name (without the /real_time suffix)."""
    found = {}
    for b in report.get("benchmarks", []):
        name = b.get("run_name", b["name"]).split("/")[0]
        if b.get("error_occurred"):
            found[name] = {"error": b.get("error_message", "error")}
        elif b.get("aggregate_name") == "median":
            found[name] = b
    return found


def main(path):
    with open(path) as f:
        report = json.load(f)
    got = medians(report)
    rows = []
    failed = 0

    def row(label, median, target, verdict):
        nonlocal failed
        failed += verdict == "FAIL"
        rows.append((label, median, target, verdict))

    for key, label, limit in TIME_TARGETS_NS:
        b = got.get(key)
        if b is None:
            row(label, "not run", f"<= {limit} ns", "-")
        elif "error" in b:
            row(label, b["error"], f"<= {limit} ns", "FAIL")
        else:
            ns = b["real_time"] * NS_PER_UNIT[b.get("time_unit", "ns")]
            row(label, f"{ns:.1f} ns", f"<= {limit} ns", "PASS" if ns <= limit else "FAIL")

    reference = got.get(MEMCPY)
    ref_bw = reference.get("bytes_per_second") if reference and "error" not in reference else None
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

    widths = [max(len(r[i]) for r in rows + [("benchmark", "median", "target", "result")]) for i in range(4)]
    header = ("benchmark", "median", "target", "result")
    for r in [header] + rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    context = report.get("context", {})
    print(f"\n{context.get('host_name', '?')}: {context.get('num_cpus', '?')} CPUs at "
          f"{context.get('mhz_per_cpu', '?')} MHz; {failed} target(s) missed")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} BENCHMARK_JSON")
    sys.exit(main(sys.argv[1]))
