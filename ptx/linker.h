// Links relocatable PTX (what `nvcc -rdc` compiles each source file to) into one module the parser
// (ptx/parser.h) reads as any other: the text of what the given kernels reach, with every
// `.extern` symbol resolved against another object's `.visible` or `.weak` definition and every
// object's own (non-visible) symbols renamed apart. docs/ptx.md, "Linking relocatable PTX".
//
// Lazy by design: the objects are scanned at module level only (a function's body is skipped by
// its braces, never parsed), and the output holds the bodies of the kernels asked for and of
// the functions they call directly or whose address their code takes (`mov`), transitively, and
// the variables any of those name. Functions that only a variable's initialiser names (a table
// of function pointers) are defined too, with what they reach, while that adds at most
// kTableBytes of PTX; beyond that all of them are declared, not defined: they have addresses, and
// each is linked into the kernel at its first call (linkOnCall, ptx::extendKernel; docs/nccl.md
// says why: NCCL's table names all 671 of its device functions, 131 MB of PTX). Every link of
// kernels (and of a function at its call) declares every function of the objects and lays out
// every .global and .const variable, in one order and under the same names, so that all links of
// the objects agree on every address: the image's variables are one copy that all its kernels
// reach, placed by the driver once per context from linkVariables' text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptx/ir.h"

namespace mcsim::ptx {

constexpr size_t kTableBytes = size_t{16} << 20;

// One relocatable object: its name (for messages: "nccl_rel12.ptx") and its PTX text, which
// must outlive the link.
struct LinkObject {
  std::string name;
  const std::string* text = nullptr;
};

struct LinkedPtx {
  std::string text;  // one module: header, declarations, variables, function bodies
  // Where each piece of `text` comes from: text line `line` onwards is `object`'s from `objectLine`.
  struct Piece {
    uint32_t line = 0;
    uint32_t object = 0;
    uint32_t objectLine = 0;
  };
  std::vector<Piece> pieces;
  std::vector<std::string> objectNames;
  size_t objectsScanned = 0;     // every object given
  size_t functionsDefined = 0;   // bodies in `text`
  size_t functionsDeclared = 0;  // functions only declared (an initialiser names them)
  bool tablesDeclaredOnly = false;  // their definitions would have added more than kTableBytes
  size_t variables = 0;
  // The link failed on a symbol declared .extern that no object defines (the real JIT linker
  // answers that with CUDA_ERROR_INVALID_SOURCE, other failures with CUDA_ERROR_INVALID_PTX).
  bool unresolved = false;

  // "obj.ptx:123" for line `line` of `text` ("" when it is not from an object). And a parser
  // message "<name>:<line>: why" about `text` with its line turned into the object's.
  std::string where(uint32_t line) const;
  std::string translate(const std::string& message) const;
};

// The objects, scanned once (module-level statements, symbol tables), then linked for any number
// of kernel sets: the scan of NCCL's 127 objects (131 MB) is most of a link's cost.
class PtxLinker {
 public:
  explicit PtxLinker(std::vector<LinkObject> objects);
  ~PtxLinker();
  PtxLinker(const PtxLinker&) = delete;
  PtxLinker& operator=(const PtxLinker&) = delete;
  // Scans the objects (once; later calls answer as the first did). False with `error`: an object
  // cannot be scanned, or two objects define the same .visible symbol.
  bool scan(std::string* error);
  // Links `roots` (after a successful scan), as linkPtx below; `tableBytes`: the most PTX that
  // defining the functions only initialisers name may add.
  bool link(const std::vector<std::string>& roots, LinkedPtx* out, std::string* error,
            size_t tableBytes = kTableBytes) const;
  // The link that adds `function` (its mangled name), declared only in `kernel`'s link, to the
  // kernel at its first call (ptx::extendKernel): the kernel and `function` with what they reach,
  // every other function declared and every .global and .const variable laid out as in the
  // kernel's link, so that addresses and places agree.
  bool linkOnCall(const std::string& kernel, const std::string& function, LinkedPtx* out, std::string* error) const;
  // The whole program, as the driver's JIT linker (cuLinkComplete) links it: every kernel of every
  // object and every .global and .const variable with external linkage (.visible or .weak) that
  // stands, with what they reach; tables of function pointers are defined whole, whatever their
  // size. Errors as link's (an .extern reached that no object defines, say); also false when the
  // objects define no kernel and no such variable. `variables` false: the kernels only, with what
  // they reach.
  bool linkProgram(LinkedPtx* out, std::string* error, bool variables = true) const;
  // The image's variables alone, laid out as every link of kernels lays them out (with every
  // function declared, so that initialisers holding functions' addresses agree): what the driver
  // places once per context and cuModuleGetGlobal finds, without linking any kernel.
  bool linkVariables(LinkedPtx* out, std::string* error) const;
  // The kernels (.entry) the objects define, in object order.
  std::vector<std::string> kernels() const;

 private:
  enum class Mode { kKernels, kOnCall, kProgram, kProgramKernels, kVariables };
  bool linkWith(const std::vector<std::string>& roots, LinkedPtx* out, std::string* error, size_t tableBytes,
                Mode mode) const;
  struct State;
  std::unique_ptr<State> s_;
};

// Links the kernels `roots` (their mangled names) of `objects`. False with `error` naming the
// symbol and the object(s) when a root is no kernel of any object, a symbol reached is declared
// `.extern` and defined by none (dynamic shared memory, `.extern .shared x[]`, and the functions
// the executor provides, vprintf and __assertfail, excepted), two objects define the same
// `.visible` symbol (a `.weak` definition yields to a `.visible` one, and the first of several
// `.weak` ones is taken), or an object cannot be scanned (an unclosed body, say).
bool linkPtx(const std::vector<LinkObject>& objects, const std::vector<std::string>& roots, LinkedPtx* out,
             std::string* error);

}  // namespace mcsim::ptx
