#!/usr/bin/env python3
"""Prints the cuGetProcAddress variants of driver functions, as driver/entry_points.def lines.

cudaTypedefs.h names every ABI variant of a driver function as PFN_<name>_v<version>[_ptds|_ptsz],
where <version> is the CUDA version that introduced it. Sorted by version, the first plain variant
is exported as <name>, the second as <name>_v2, and so on; a per-thread variant takes the symbol of
the newest plain variant at its version plus its _ptds/_ptsz suffix. Usage:
  entry_variants.py cudaTypedefs.h NAME [NAME ...]
"""
import re
import sys


def variants(text):
    by_name = {}
    for m in re.finditer(r"PFN_(cu\w+?)_v(\d+)(_ptds|_ptsz)?\)", text):
        name, ver, kind = m.group(1), int(m.group(2)), m.group(3) or ""
        by_name.setdefault(name, set()).add((ver, kind))
    return by_name


def symbols(name, vs):
    plain = sorted(v for v, k in vs if k == "")
    out = []
    for i, v in enumerate(plain):
        out.append((v, "", name if i == 0 else f"{name}_v{i + 1}"))
    for v, k in sorted(x for x in vs if x[1]):
        base = [s for pv, _, s in out if pv <= v and _ == ""]
        out.append((v, k, (base[-1] if base else name) + k))
    return out


def main():
    text = open(sys.argv[1]).read()
    by_name = variants(text)
    # Symbol names are numbered over every variant, but only variants whose PFN type the public
    # part of the header declares are printed: the older ones are typedef'd for the driver's own
    # build only (__CUDA_API_VERSION_INTERNAL), so mcsim cannot check their signatures.
    public = variants(text.split("#if defined(__CUDA_API_VERSION_INTERNAL)")[0])
    for name in sys.argv[2:]:
        if name not in by_name:
            print(f"// {name}: not in cudaTypedefs.h", file=sys.stderr)
            continue
        for v, k, sym in symbols(name, by_name[name]):
            if (v, k) not in public.get(name, set()):
                continue
            kind = {"": "PLAIN", "_ptds": "PTDS", "_ptsz": "PTSZ"}[k]
            print(f"MCSIM_ENTRY({name}, {v}, {sym}, PFN_{name}_v{v}{k})")


if __name__ == "__main__":
    main()
