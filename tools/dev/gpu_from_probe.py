#!/usr/bin/env python3
"""Writes the device attributes a real GPU reported (tools/probe output) into a GPU description.

  gpu_from_probe.py PROBE.txt GPU.json [NAME=VALUE ...]

Every `attr.NAME = VALUE` line of the probe output replaces the description's "attributes";
`memory_bytes` and `name` are taken from the probe too. NAME=VALUE arguments override single
attributes afterwards (e.g. MULTICAST_SUPPORTED=1 for a GPU that supports multicast when it sits
in an NVSwitch fabric, which a lone probed GPU reports as 0).
"""
import json
import re
import sys


def main():
    probe, path, overrides = sys.argv[1], sys.argv[2], sys.argv[3:]
    text = open(probe).read()
    attrs = {}
    for m in re.finditer(r"^attr\.([A-Z0-9_]+) = (-?\d+)$", text, re.M):
        attrs[m.group(1)] = int(m.group(2))
    for o in overrides:
        k, v = o.split("=", 1)
        attrs[k] = int(v, 0)
    gpu = json.load(open(path))
    gpu["attributes"] = attrs
    name = re.search(r"^dev\.0\.name = (.+)$", text, re.M)
    mem = re.search(r"^dev\.0\.totalmem = (\d+)$", text, re.M)
    if name:
        gpu["name"] = name.group(1).strip()
    if mem:
        gpu["memory_bytes"] = int(mem.group(1))
    with open(path, "w") as f:
        json.dump(gpu, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
