#!/usr/bin/env python3
"""Generates the trace layer of libcuda.so.1 from driver/entry_points.def.

Run by the build (traces/CMakeLists.txt) whenever entry_points.def, calls.def or this script
changes, so that an entry point added to the .def gets its wrapper without anyone touching the
trace code. Writes three files into OUTDIR:

  mcsim_internal_names.h  renames every exported symbol to mcsim_impl_<symbol> in the driver's
                          own translation units (they define the implementations; the wrappers
                          define the exported names and forward to them)
  trace_calls.inc         one CallDesc per ABI variant: each parameter's C type and trace kind,
                          and a thunk that calls a function of that signature from 64-bit slots
                          (the replayer's way of calling any entry point)
  trace_wrappers.inc      one exported wrapper per ABI variant

Parameter names and types come from the PFN typedefs (cudaTypedefs.h and the extra headers given
on the command line); calls.def says what types alone cannot (which size goes with a host
buffer, which output is a new object).
"""
import argparse
import re
import sys

ENTRY_RE = re.compile(r'^\s*MCSIM_ENTRY\(\s*(\w+)\s*,\s*(\d+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)')
TYPEDEF_RE = re.compile(r'typedef\s+CUresult\s*\(\s*CUDAAPI\s*\*\s*(PFN_\w+)\s*\)\s*\(([^;]*?)\)\s*;', re.S)

HANDLE_TYPES = {'CUcontext': 'kCtx', 'CUmemGenericAllocationHandle': 'kMem', 'CUmemoryPool': 'kPool',
                'CUstream': 'kStream', 'CUevent': 'kEvent', 'CUmodule': 'kModule', 'CUfunction': 'kFunction',
                'CUlibrary': 'kLibrary', 'CUkernel': 'kKernel'}
# Other opaque handles of cuda.h (typedef struct X_st *CUname), found by read_enums: named "obj<N>".
OPAQUE = set()
STRUCT_TYPES = {'CUmemAllocationProp': 'kAllocProp', 'CUmemLocation': 'kLocation',
                'CUmulticastObjectProp': 'kMcProp', 'CUmemPoolProps': 'kPoolProps'}
SCALAR_TYPES = {'int': 'kI32', 'unsigned int': 'kU32', 'size_t': 'kU64', 'unsigned long long': 'kU64',
                'cuuint64_t': 'kU64', 'cuuint32_t': 'kU32', 'CUdevice': 'kI32', 'float': 'kF32',
                'unsigned long': 'kU64', 'long long': 'kI64', 'CUresult': 'kI32',
                'unsigned char': 'kU32', 'unsigned short': 'kU32', 'char': 'kI32', 'short': 'kI32'}
HANDLE_SUBS = {'ctx': 'kCtx', 'mem': 'kMem', 'pool': 'kPool', 'stream': 'kStream', 'event': 'kEvent',
               'module': 'kModule', 'func': 'kFunction', 'library': 'kLibrary', 'kernel': 'kKernel'}


def fail(msg):
    sys.stderr.write('gen_wrappers.py: %s\n' % msg)
    sys.exit(1)


def read_typedefs(paths):
    out = {}
    for p in paths:
        text = open(p).read()
        text = re.sub(r'//[^\n]*', '', text)
        for m in TYPEDEF_RE.finditer(text):
            out[m.group(1)] = ' '.join(m.group(2).split())
    # cudaTypedefs.h declares the pre-3.2 32-bit variants only for NVIDIA's own build.
    out['PFN_cuMemAlloc_v2000'] = 'unsigned int *dptr, unsigned int bytesize'
    return out


def split_param(text):
    """'const CUmemAllocationProp_v1 *prop' -> (full C type, base type, pointer depth, const, name)"""
    m = re.match(r'^(.*?)(\w+)$', text.strip())
    if not m:
        fail('cannot read parameter %r' % text)
    ctype, name = m.group(1).strip(), m.group(2)
    depth = ctype.count('*')
    const = bool(re.match(r'^const\b', ctype))
    base = ctype.replace('*', ' ').replace('const', ' ').replace('struct', ' ')
    base = ' '.join(base.split())
    base = re.sub(r'_v\d+$', '', base)  # CUdeviceptr_v2 -> CUdeviceptr
    return ctype, base, depth, const, name


ENUMS = set()


def read_enums(paths):
    for p in paths:
        text = open(p).read()
        for m in re.finditer(r'typedef\s+enum\s+\w*\s*\{[^}]*\}\s*(\w+)\s*;', text):
            ENUMS.add(re.sub(r'_v\d+$', '', m.group(1)))
        for m in re.finditer(r'typedef\s+struct\s+\w+\s*\*\s*(CU\w+)\s*;', text):
            OPAQUE.add(re.sub(r'_v\d+$', '', m.group(1)))


def slot_ctype(base, depth):
    if depth > 0:
        return 'kPtr'
    if base in SCALAR_TYPES:
        return SCALAR_TYPES[base]
    if base in HANDLE_TYPES or base == 'CUdeviceptr':
        return 'kU64' if base in ('CUmemGenericAllocationHandle', 'CUdeviceptr') else 'kPtr'
    if base in OPAQUE:
        return 'kPtr'
    if base in ENUMS:
        return 'kI32'
    return None  # unknown: the parameter is recorded raw


def handle_kind(base):
    if base in HANDLE_TYPES:
        return 'HandleKind::' + HANDLE_TYPES[base]
    return 'HandleKind::kOther' if base in OPAQUE else None


def creates(call):
    return any(w in call for w in ('Create', 'Alloc', 'Import'))


def infer(call, base, depth, const, pname):
    """(kind, sub) from the C type alone; ('kRaw', '0') when the type does not say."""
    if depth == 0:
        if handle_kind(base):
            return 'kHandleIn', handle_kind(base)
        if base == 'CUdeviceptr':
            return 'kAddrIn', '0'
        if base == 'void':
            return 'kRaw', '0'
        return ('kScalar', '0') if slot_ctype(base, 0) else ('kRaw', '0')
    if depth == 1:
        if base == 'char':
            return ('kStrIn', '0') if const else ('kRaw', '0')
        if handle_kind(base) and not const:
            return ('kHandleNew' if creates(call) else 'kHandleOut'), handle_kind(base)
        if base == 'CUdeviceptr' and not const:
            return 'kAddrOut', '0'
        if base == 'CUuuid' and not const:
            return 'kOutBytes', '16'
        if base == 'CUmemLocation':
            return 'kStructIn', 'StructKind::kLocation'
        if base in STRUCT_TYPES:
            return ('kStructIn' if const else 'kStructOut'), 'StructKind::' + STRUCT_TYPES[base]
        if base == 'void':
            return 'kRaw', '0'
        if not const and (base in SCALAR_TYPES or base in ENUMS):
            return 'kOutScalar', 'CType::' + (SCALAR_TYPES.get(base, 'kI32'))
        return 'kRaw', '0'
    if depth == 2 and base == 'char' and const:
        return 'kOutCStr', '0'
    return 'kRaw', '0'


class Output:
    """A generated file, written only when its text changes, so that an unrelated change to
    entry_points.def does not rebuild every driver source that includes the renames."""

    def __init__(self, path):
        self.path, self.parts = path, []

    def write(self, text):
        self.parts.append(text)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        text = ''.join(self.parts)
        try:
            if open(self.path).read() == text:
                return
        except OSError:
            pass
        with open(self.path, 'w') as f:
            f.write(text)


def read_overrides(path):
    out = {}
    for n, line in enumerate(open(path), 1):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        words = line.split()
        base, rest = words[0], words[1:]
        spec = {}
        for w in rest:
            if '=' not in w:
                fail('%s:%d: expected PARAM=KIND, got %r' % (path, n, w))
            p, k = w.split('=', 1)
            spec[p] = k.split(':')
        out[base] = (spec, n)
    return out


OVERRIDE_KINDS = {'h_new': 'kHandleNew', 'h_out': 'kHandleOut', 'addr_new': 'kAddrNew', 'addr_out': 'kAddrOut',
                  'addr_in': 'kAddrIn', 'host_in': 'kHostIn', 'host_out': 'kHostOut', 'host_new': 'kHostNew',
                  'host_ptr': 'kHostPtr', 'out_str': 'kOutStr', 'access_descs': 'kAccessDescs',
                  'shareable_out': 'kShareableOut', 'shareable_in': 'kShareableIn', 'ptr_attr': 'kPtrAttr',
                  'ptr_attrs': 'kPtrAttrs', 'pool_attr': 'kPoolAttr', 'pfn': 'kPfn', 'aux': 'kAux', 'raw': 'kRaw',
                  'image': 'kImage', 'image_file': 'kImageFile', 'jit_options': 'kOptions',
                  'lib_options': 'kOptions', 'h_array': 'kHandleArray', 'launch_func': 'kLaunchFunc',
                  'kernel_params': 'kKernelParams', 'kernel_extra': 'kKernelExtra', 'launch_config': 'kLaunchConfig',
                  'host_fn': 'kHostFn'}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--def', dest='defs', required=True)
    ap.add_argument('--calls', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('headers', nargs='+')
    a = ap.parse_args()

    typedefs = read_typedefs(a.headers)
    read_enums(a.headers)
    overrides = read_overrides(a.calls)
    entries = []
    seen = set()
    for line in open(a.defs):
        m = ENTRY_RE.match(line)
        if not m:
            continue
        base, ver, sym, pfn = m.group(1), int(m.group(2)), m.group(3), m.group(4)
        if sym in seen:
            continue
        seen.add(sym)
        if pfn not in typedefs:
            fail('%s: no typedef for %s (symbol %s)' % (a.defs, pfn, sym))
        params = [] if typedefs[pfn].strip() in ('', 'void') else [split_param(p) for p in typedefs[pfn].split(',')]
        entries.append((base, ver, sym, pfn, params))

    used = set()
    calls, wrappers, names = [], [], []
    for idx, (base, ver, sym, pfn, params) in enumerate(entries):
        spec, _ = overrides.get(base, ({}, 0))
        if spec:
            used.add(base)
        pnames = [p[4] for p in params]
        for p in spec:
            if p not in pnames:
                fail('%s: %s has no parameter %r' % (a.calls, base, p))
        rows = []
        described = True
        for ctype, pbase, depth, const, pname in params:
            kind, sub = infer(base, pbase, depth, const, pname)
            ref, ref2 = -1, -1
            if pname in spec:
                k = spec[pname]
                if k[0] not in OVERRIDE_KINDS:
                    fail('%s: unknown kind %r for %s.%s' % (a.calls, k[0], base, pname))
                kind = OVERRIDE_KINDS[k[0]]
                sub = '0'
                refs = k[1:]
                if k[0] in ('h_new', 'h_out', 'h_array'):
                    if len(k) < 2 or k[1] not in HANDLE_SUBS:
                        fail('%s: %s.%s: %s needs a handle kind (%s)' % (a.calls, base, pname, k[0], ', '.join(HANDLE_SUBS)))
                    sub = 'HandleKind::' + HANDLE_SUBS[k[1]]
                    refs = k[2:]
                elif k[0] == 'lib_options':
                    sub = '1'
                for r in refs:
                    if r not in pnames:
                        fail('%s: %s.%s: %s refers to %r, which is no parameter' % (a.calls, base, pname, k[0], r))
                if len(refs) > 0:
                    ref = pnames.index(refs[0])
                if len(refs) > 1:
                    ref2 = pnames.index(refs[1])
            if kind == 'kRaw':
                described = False
            # A by-value type the generator does not know travels as a 64-bit integer (recorded raw).
            rows.append('{"%s", CType::%s, Kind::%s, static_cast<uint8_t>(%s), %d, %d}'
                        % (pname, slot_ctype(pbase, depth) or 'kU64', kind, sub, ref, ref2))
        n = len(params)
        args = ', '.join('fromSlot<%s>(a[%d])' % (p[0], i) for i, p in enumerate(params))
        if rows:
            calls.append('const ParamDesc kParams_%s[] = {\n  %s,\n};' % (sym, ',\n  '.join(rows)))
        calls.append('CUresult thunk_%s(void* fn, const uint64_t* a) {\n  (void)a;\n  return reinterpret_cast<%s>(fn)(%s);\n}'
                     % (sym, pfn, args))
        names.append('  {"%s", "%s", %d, %d, %s, &thunk_%s, %s},'
                     % (sym, base, ver, n, ('kParams_' + sym) if rows else 'nullptr', sym,
                        'true' if described else 'false'))
        decl = ', '.join('%s %s' % (p[0], p[4]) for p in params)
        fwd_args = ', '.join(p[4] for p in params)
        slots = ', '.join('::mcsim::trace::toSlot(%s)' % p[4] for p in params)
        guard = 'MCSIM_TRACE_MULTICAST_GUARD(%d)\n  ' % idx if base.startswith('cuMulticast') else ''
        pfn_params = [p[4] for p in params if p[4] in spec and spec[p[4]][0] == 'pfn']
        if pfn_params:
            # cuGetProcAddress: the pointer it found is replaced by its wrapper, recording or not.
            out_name, sym_name = pfn_params[0], spec[pfn_params[0]][1]
            fwd = 'MCSIM_TRACE_FORWARD(%s, %s, %d)(%s)' % (sym, pfn, idx, fwd_args)
            fix = 'if (r_ == CUDA_SUCCESS) ::mcsim::trace::wrapProcAddress(%s, %s);' % (sym_name, out_name)
            wrappers.append(
                'MCSIM_TRACE_DECLARE(%(sym)s, %(pfn)s)\n'
                'extern "C" CUresult CUDAAPI %(sym)s(%(decl)s) {\n'
                '  MCSIM_TRACE_PRELUDE(%(idx)d)\n'
                '  if (__builtin_expect(!(::mcsim::trace::gRecording | ::mcsim::trace::gLogging), 1)) {\n'
                '    const CUresult r_ = %(fwd)s;\n    %(fix)s\n    return r_;\n  }\n'
                '  const uint64_t slots_[] = {%(slots)s0};\n'
                '  ::mcsim::trace::CallLog log_(%(idx)d, slots_);\n'
                '  if (!::mcsim::trace::gRecording) {\n'
                '    const CUresult r_ = %(fwd)s;\n    %(fix)s\n    return log_.finish(r_);\n  }\n'
                '  ::mcsim::trace::CallScope scope_(%(idx)d, slots_);\n'
                '  const CUresult r_ = %(fwd)s;\n  %(fix)s\n'
                '  return log_.finish(scope_.finish(r_));\n'
                '}\n' % dict(sym=sym, pfn=pfn, decl=decl, idx=idx, fwd=fwd, fix=fix, slots=slots + ', '))
            continue
        wrappers.append(
            'MCSIM_TRACE_DECLARE(%(sym)s, %(pfn)s)\n'
            'extern "C" CUresult CUDAAPI %(sym)s(%(decl)s) {\n'
            '  MCSIM_TRACE_PRELUDE(%(idx)d)\n'
            '  %(guard)sif (__builtin_expect(!(::mcsim::trace::gRecording | ::mcsim::trace::gLogging), 1)) return MCSIM_TRACE_FORWARD(%(sym)s, %(pfn)s, %(idx)d)(%(fwd)s);\n'
            '  const uint64_t slots_[] = {%(slots)s0};\n'
            '  ::mcsim::trace::CallLog log_(%(idx)d, slots_);\n'
            '  if (!::mcsim::trace::gRecording) return log_.finish(MCSIM_TRACE_FORWARD(%(sym)s, %(pfn)s, %(idx)d)(%(fwd)s));\n'
            '  ::mcsim::trace::CallScope scope_(%(idx)d, slots_);\n'
            '  return log_.finish(scope_.finish(MCSIM_TRACE_FORWARD(%(sym)s, %(pfn)s, %(idx)d)(%(fwd)s)));\n'
            '}\n' % dict(sym=sym, pfn=pfn, decl=decl or 'void', idx=idx, guard=guard, fwd=fwd_args,
                         slots=(slots + ', ') if slots else ''))
    for base in overrides:
        if base not in used:
            fail('%s:%d: %s is no entry point of %s' % (a.calls, overrides[base][1], base, a.defs))

    header = '// Generated by traces/gen_wrappers.py from %s: do not edit.\n' % a.defs
    with Output(a.out + '/trace_calls.inc') as f:
        f.write(header)
        f.write('\n'.join(calls))
        f.write('\n\nconst CallDesc kCallTable[] = {\n%s\n};\n' % '\n'.join(names))
    with Output(a.out + '/trace_wrappers.inc') as f:
        f.write(header)
        # The wrappers define every variant under its exact name: lift whatever mapping cuda.h
        # makes of it (cuEventElapsedTime -> cuEventElapsedTime_v2), as driver/abi_names.h does.
        f.write(''.join('#ifdef %s\n#undef %s\n#endif\n' % (e[2], e[2]) for e in entries))
        f.write('\n'.join(wrappers))
        f.write('\nvoid* const kWrapperTable[] = {\n%s\n};\n'
                % '\n'.join('  reinterpret_cast<void*>(&%s),' % e[2] for e in entries))
        f.write('\n#ifdef MCSIM_TRACE_IMPL_TABLE\nvoid* const kImplTable[] = {\n%s\n};\n#endif\n'
                % '\n'.join('  reinterpret_cast<void*>(&mcsim_impl_%s),' % e[2] for e in entries))
    with Output(a.out + '/mcsim_internal_names.h') as f:
        f.write(header)
        f.write('// Included (without a guard, on purpose) by driver/driver.h after cuda.h, and again by\n'
                '// driver/abi_names.h after it lifts cuda.h\'s own mappings: a name cuda.h maps to another\n'
                '// (cuCtxCreate -> cuCtxCreate_v2) is left alone, since its target is renamed.\n')
        for e in entries:
            f.write('#ifndef %s\n#define %s mcsim_impl_%s\n#endif\n' % (e[2], e[2], e[2]))


if __name__ == '__main__':
    main()
