#!/usr/bin/env python3
"""Runs rt_timeline under `mcsim run --timeline FILE --timeline-summary` and checks what the
timeline holds (docs/timeline.md): NVTX ranges nested as pushed, a domain's row, a mark, a start /
end range, kernels and copies as slices with their arguments, arrows from the calls that queued
them, a kernel that never finished, the summary table, and the same file on a second run.

  check_timeline.py MCSIM RT_TIMELINE WORKDIR
"""
import json
import os
import subprocess
import sys

mcsim, program, workdir = sys.argv[1:4]
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def run(case, path):
    if os.path.exists(path):
        os.remove(path)
    p = subprocess.run([mcsim, "run", "--timeline", path, "--timeline-summary", "--", program, case],
                       capture_output=True, text=True, timeout=120)
    expect(p.returncode == 0, f"{case}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    with open(path) as f:
        return json.load(f), p.stderr


def rows(doc):
    """(pid, tid) -> thread name."""
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
            if e["ph"] == "M" and e["name"] == "thread_name"}


def slices(doc, row_name):
    names = rows(doc)
    return [e for e in doc["traceEvents"] if e["ph"] == "X" and names.get((e["pid"], e["tid"])) == row_name]


def named(events, name):
    found = [e for e in events if e["name"] == name]
    expect(len(found) == 1, f"one slice '{name}', found {len(found)}")
    return found[0] if found else {"ts": 0, "dur": 0, "args": {}}


def within(inner, outer):
    return outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 1e-9


path = os.path.join(workdir, "rt_timeline.json")
doc, stderr = run("ranges", path)
nvtx = slices(doc, "NVTX, thread 1")
setup, compute, inner = named(nvtx, "setup"), named(nvtx, "compute"), named(nvtx, "inner")
mark = named(nvtx, "before the launch")
expect(mark["dur"] == 0, "the mark is an instant")
expect(within(inner, compute) and within(mark, compute), "'inner' and the mark lie within 'compute'")
expect(setup["ts"] + setup["dur"] <= compute["ts"], "'setup' ends before 'compute' starts")
named(slices(doc, "NVTX rtlib, thread 1"), "registered work")
async_events = [e for e in doc["traceEvents"] if e["ph"] in "be" and e.get("cat") == "nvtx"]
expect(sorted(e["ph"] for e in async_events) == ["b", "e"] and async_events[0]["name"] == "start to end",
       f"the start / end range as one async slice: {async_events}")

device = [e for e in doc["traceEvents"] if e["ph"] == "X" and e.get("cat") in ("kernel", "copy", "memset")]
kernels = [e for e in device if e["cat"] == "kernel"]
expect(len(kernels) == 1 and kernels[0]["name"] == "rt_scale(float*, float, int)", f"one rt_scale kernel slice: {kernels}")
if kernels:
    k = kernels[0]["args"]
    expect(k.get("symbol") == "_Z8rt_scalePffi", f"the kernel's symbol: {k}")
    expect(k.get("grid") == [4, 1, 1] and k.get("block") == [128, 1, 1], f"the kernel's grid and block: {k}")
    expect(k.get("runs") == "PTX" and len(k.get("parameters (8-byte words)", [])) == 2, f"its parameters: {k}")
    expect(k.get("global bytes read") == 2048 and k.get("global bytes written") == 2048, f"its bytes: {k}")
    expect(within(kernels[0], compute) or kernels[0]["ts"] >= compute["ts"], "the kernel runs after 'compute' began")
copies = sorted(e["name"] for e in device if e["cat"] == "copy")
expect(copies == ["copy DtoH", "copy HtoD"], f"the copies: {copies}")
memsets = [e for e in device if e["cat"] == "memset"]
expect(len(memsets) >= 1 and memsets[-1]["args"].get("bytes") == 1024, f"the memset of 1 KiB: {memsets}")

# Arrows: each from a driver call to the device work it queued.
calls = {e["bind_id"]: e for e in slices(doc, "driver calls") if e.get("flow_out")}
targets = {e["bind_id"]: e for e in device if e.get("flow_in")}
expect(len(targets) >= 4 and set(targets) <= set(calls), f"arrows from calls to every kernel and copy: {sorted(targets)}")
for bind, work in targets.items():
    if bind in calls:
        expect(calls[bind]["ts"] <= work["ts"], f"arrow {bind} goes forward in time")
        if work["cat"] == "kernel":
            expect(calls[bind]["name"].startswith("cuLaunch"), f"the kernel's arrow leaves a launch: {calls[bind]['name']}")

expect("timeline summary" in stderr and "rt_scale(float*, float, int)" in stderr, f"the summary names the kernel:\n{stderr}")
with open(path) as f:
    first = f.read()
run("ranges", path)
with open(path) as f:
    expect(f.read() == first, "a second run writes the same file")

doc, stderr = run("unfinished", os.path.join(workdir, "rt_timeline_unfinished.json"))
waiting = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["name"].startswith("rt_wait_for_flag(")]
expect(len(waiting) == 1 and waiting[0]["name"].endswith("(unfinished)") and waiting[0]["args"].get("finished") is False,
       f"the kernel left waiting is unfinished: {waiting}")
open_range = [e for e in slices(doc, "NVTX, thread 1") if e["name"].startswith("never popped")]
expect(len(open_range) == 1 and open_range[0]["name"].endswith("(unfinished)"), f"the range never popped: {open_range}")
expect("1 unfinished" in stderr, f"the summary counts the unfinished kernel:\n{stderr}")

for f in failures:
    print("FAIL", f)
print("ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
