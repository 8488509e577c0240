// Module image reader (see module_image.h).
//
// Layout facts used here, checked against what CUDA 13.0's nvcc and fatbinary write:
//  - fatbin header, 16 bytes: u32 magic 0xBA55ED50, u16 version (1), u16 header size (16),
//    u64 size of the entries that follow the header.
//  - fatbin entry header (64 bytes, or longer: 80 and 112 are seen for newer architectures), then
//    the payload: u16 kind at 0 (1 PTX, 2 ELF), u32 header size at 4, u64 payload size at 8
//    (padded to 8 bytes), u32 arch at 28, u64 flags at 40. Compression shows in the flags:
//    0x2000 for the older scheme, 0x8000 for the zstd one CUDA 12.8+ uses. A zstd entry (read
//    from what CUDA 13.0's `nvcc -fatbin` writes by default, whose PTX entries it compresses):
//    the payload is one zstd frame (RFC 8878, magic 28 B5 2F FD) of the u32 at 16 bytes (the
//    payload size rounded up to 8), decompressing to the u64 at 56 bytes. nvcc's --no-compress
//    writes flags without 0x8000, 0 at 56, and the plain text: the same bytes the frame holds
//    (checked with zstd -d). The next entry follows the payload.
//  - __fatBinC_Wrapper_t (fatbinary_section.h): int magic 0x466243B1, int version (1 or 2),
//    pointer to the fatbin.
//  - cubins are ELF64 little-endian for EM_CUDA (190). Every kernel entry is a global STT_FUNC
//    symbol (local for a kernel in an anonymous namespace: read from nvcc -cubin's output with
//    readelf; weak for a template's kernel in the cubin nvlink writes for an -rdc program) whose
//    st_other has bit 0x10 set, defined in its own section .text.<name>; __device__ functions of
//    relocatable (-rdc) cubins are global STT_FUNC in .text.<name> too but lack the 0x10 bit, and
//    internal helpers are weak, so all three tests are needed.
#include "driver/module_image.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#include <zstd.h>

namespace mcsim::driver {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr uint32_t kWrapperMagic = 0x466243B1u;
constexpr uint16_t kKindPtx = 1;
constexpr uint16_t kKindElf = 2;
constexpr uint64_t kCompressedOld = 0x2000u;   // the pre-12.8 scheme: not read
constexpr uint64_t kCompressedZstd = 0x8000u;
// A decompressed entry larger than this is refused (no real module comes near it).
constexpr uint64_t kMaxDecompressedBytes = uint64_t{1} << 30;
constexpr size_t kFatbinHeaderBytes = 16;
constexpr size_t kFatbinEntryMinBytes = 64;
constexpr uint16_t kEmCuda = 190;
constexpr size_t kElfHeaderBytes = 64;
constexpr size_t kElfSectionBytes = 64;
constexpr size_t kElfSymbolBytes = 24;
constexpr uint32_t kShtSymtab = 2, kShtStrtab = 3, kShtNobits = 8;
constexpr uint8_t kSttFunc = 2, kStbLocal = 0, kStbGlobal = 1, kStbWeak = 2, kStoCudaEntry = 0x10;

// [data, data + size): every read checks its bounds and copies (the image need not be aligned).
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t size() const { return size_; }
  const uint8_t* data() const { return data_; }
  bool has(uint64_t off, uint64_t len) const { return off <= size_ && len <= size_ - off; }
  template <class T>
  bool get(uint64_t off, T& v) const {
    if (!has(off, sizeof(T))) return false;
    std::memcpy(&v, data_ + off, sizeof(T));
    return true;
  }
  template <class T>
  T at(uint64_t off) const {  // only after has() covered it
    T v{};
    std::memcpy(&v, data_ + off, sizeof(T));
    return v;
  }
  Bytes sub(uint64_t off, uint64_t len) const { return Bytes(data_ + off, len); }

 private:
  const uint8_t* data_;
  size_t size_;
};

ModuleImage refused(ImageFormat format, std::string why) {
  ModuleImage r;
  r.format = format;
  r.error = std::move(why);
  return r;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

void sortUnique(std::vector<std::string>& names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
}

// Whether the image starts with `magic` (little-endian). Compared byte by byte, stopping at the
// first difference: none of the magics has a zero byte, so on a NUL-terminated PTX string of
// unknown size this never reads past the terminator.
bool startsWith(const uint8_t* p, size_t size, uint32_t magic) {
  for (size_t i = 0; i < 4; ++i) {
    if (i >= size || p[i] != static_cast<uint8_t>(magic >> (8 * i))) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// PTX

bool identStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%';
}
bool identChar(char c) { return identStart(c) || (c >= '0' && c <= '9'); }

// Text that does not start with .version is not PTX at all: refused as kUnknown, and the caller
// says what it expected instead.
constexpr const char* kNotPtx = "text does not start with a .version directive";

// PTX text is lexed just enough to see directives: comments and string literals are skipped so
// that a `.entry` inside them does not count.
class PtxLexer {
 public:
  PtxLexer(const char* text, size_t len) : s_(text), n_(len) {}

  // Skips blanks and comments; false (with error()) on an unterminated comment.
  bool skipBlank() {
    while (i_ < n_) {
      const char c = s_[i_];
      if (c == '\n') {
        ++line_;
        ++i_;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++i_;
      } else if (c == '/' && i_ + 1 < n_ && s_[i_ + 1] == '/') {
        while (i_ < n_ && s_[i_] != '\n') ++i_;
      } else if (c == '/' && i_ + 1 < n_ && s_[i_ + 1] == '*') {
        const size_t start = line_;
        i_ += 2;
        while (i_ < n_ && !(s_[i_] == '*' && i_ + 1 < n_ && s_[i_ + 1] == '/')) {
          if (s_[i_] == '\n') ++line_;
          ++i_;
        }
        if (i_ >= n_) return fail("unterminated /* comment starting on line " + std::to_string(start));
        i_ += 2;
      } else {
        return true;
      }
    }
    return true;
  }

  bool atEnd() const { return i_ >= n_; }
  size_t line() const { return line_; }
  const std::string& error() const { return error_; }

  // The next token: a directive or identifier (".entry", "mcsim_copy"), a string literal
  // (skipped whole, returned as "\""), or one punctuation character.
  bool next(std::string& tok) {
    const char c = s_[i_];
    if (c == '"') {
      const size_t start = line_;
      for (++i_; i_ < n_ && s_[i_] != '"'; ++i_) {
        if (s_[i_] == '\\') ++i_;
        if (i_ < n_ && s_[i_] == '\n') ++line_;
      }
      if (i_ >= n_) return fail("unterminated string literal starting on line " + std::to_string(start));
      ++i_;
      tok = "\"";
      return true;
    }
    if (c == '.' || identChar(c)) {
      const size_t start = i_++;
      while (i_ < n_ && identChar(s_[i_])) ++i_;
      tok.assign(s_ + start, i_ - start);
      return true;
    }
    ++i_;
    tok.assign(1, c);
    return true;
  }

 private:
  bool fail(std::string why) {
    error_ = std::move(why);
    return false;
  }
  const char* s_;
  size_t n_;
  size_t i_ = 0;
  size_t line_ = 1;
  std::string error_;
};

ModuleImage parsePtx(const char* text, size_t len) {
  PtxLexer lex(text, len);
  ModuleImage r;
  r.format = ImageFormat::kPtx;
  r.bytes = len;
  bool first = true;
  std::string tok;
  for (;;) {
    if (!lex.skipBlank()) return refused(ImageFormat::kPtx, "PTX: " + lex.error());
    if (lex.atEnd()) break;
    if (!lex.next(tok)) return refused(ImageFormat::kPtx, "PTX: " + lex.error());
    if (first) {
      first = false;
      if (tok != ".version") return refused(ImageFormat::kUnknown, kNotPtx);
      continue;
    }
    if (tok != ".entry") continue;
    const size_t line = lex.line();
    if (!lex.skipBlank()) return refused(ImageFormat::kPtx, "PTX: " + lex.error());
    std::string name;
    if (lex.atEnd() || !lex.next(name) || !identStart(name[0])) {
      return refused(ImageFormat::kPtx, "PTX: .entry without a name on line " + std::to_string(line));
    }
    r.entries.push_back(std::move(name));
  }
  if (first) return refused(ImageFormat::kUnknown, kNotPtx);
  sortUnique(r.entries);
  r.ok = true;
  return r;
}

// ---------------------------------------------------------------------------------------------
// ELF (cubin)

struct Section {
  uint32_t name, type, link;
  uint64_t offset, size, entsize;
};

// A NUL-terminated string at `off` inside `table`, or nothing if it runs out of the table.
std::optional<std::string> stringAt(Bytes table, uint64_t off) {
  if (off >= table.size()) return std::nullopt;
  const void* end = std::memchr(table.data() + off, 0, table.size() - off);
  if (!end) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(table.data() + off),
                     static_cast<const uint8_t*>(end) - (table.data() + off));
}

// `size` may be kUnknownImageSize: the extent then comes from the headers.
ModuleImage parseCubin(const uint8_t* p, size_t size) {
  const ImageFormat f = ImageFormat::kCubin;
  const bool sized = size != kUnknownImageSize;
  if (sized && size < kElfHeaderBytes) return refused(f, "ELF: truncated header (" + std::to_string(size) + " bytes)");
  Bytes head(p, kElfHeaderBytes);
  if (head.at<uint8_t>(4) != 2) return refused(f, "ELF: not a 64-bit ELF (EI_CLASS " + std::to_string(head.at<uint8_t>(4)) + ")");
  if (head.at<uint8_t>(5) != 1) return refused(f, "ELF: not little-endian (EI_DATA " + std::to_string(head.at<uint8_t>(5)) + ")");
  const uint16_t machine = head.at<uint16_t>(18);
  if (machine != kEmCuda) {
    return refused(f, "ELF: machine " + std::to_string(machine) + " is not EM_CUDA (190): not a cubin");
  }
  const uint64_t phoff = head.at<uint64_t>(32), shoff = head.at<uint64_t>(40);
  const uint16_t phentsize = head.at<uint16_t>(54), phnum = head.at<uint16_t>(56);
  const uint16_t shentsize = head.at<uint16_t>(58);
  uint64_t shnum = head.at<uint16_t>(60);
  uint32_t shstrndx = head.at<uint16_t>(62);
  if (shoff == 0) return refused(f, "ELF: no section header table");
  if (shentsize != kElfSectionBytes) {
    return refused(f, "ELF: section header size " + std::to_string(shentsize) + ", expected 64");
  }
  // The extent the headers vouch for so far; with no size given, that is what may be read.
  const uint64_t limit = sized ? size : kMaxImageBytes;
  if (shoff > limit || kElfSectionBytes > limit - shoff) {
    return refused(f, "ELF: section header table at " + hex(shoff) + " lies past the image end (" + hex(limit) + ")");
  }
  // Extended numbering: with 0 / SHN_XINDEX in the header, section 0 holds the real values.
  if (shnum == 0 || shstrndx == 0xffff) {
    Bytes s0(p + shoff, kElfSectionBytes);
    if (shnum == 0) shnum = s0.at<uint64_t>(32);
    if (shstrndx == 0xffff) shstrndx = s0.at<uint32_t>(40);
  }
  if (shnum == 0 || shnum > (limit - shoff) / kElfSectionBytes) {
    return refused(f, "ELF: " + std::to_string(shnum) + " section headers at " + hex(shoff) +
                          " do not fit in the image (" + hex(limit) + " bytes)");
  }
  uint64_t extent = std::max<uint64_t>(kElfHeaderBytes, shoff + shnum * kElfSectionBytes);
  if (phoff != 0 && phnum != 0) {
    const uint64_t phBytes = uint64_t{phnum} * phentsize;
    if (phoff > limit || phBytes > limit - phoff) {
      return refused(f, "ELF: program header table at " + hex(phoff) + " lies past the image end");
    }
    extent = std::max(extent, phoff + phBytes);
  }
  Bytes table(p + shoff, shnum * kElfSectionBytes);
  std::vector<Section> sections(shnum);
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t o = i * kElfSectionBytes;
    Section& s = sections[i];
    s.name = table.at<uint32_t>(o);
    s.type = table.at<uint32_t>(o + 4);
    s.offset = table.at<uint64_t>(o + 24);
    s.size = table.at<uint64_t>(o + 32);
    s.link = table.at<uint32_t>(o + 40);
    s.entsize = table.at<uint64_t>(o + 56);
    if (s.type == kShtNobits || s.type == 0) continue;
    if (s.offset > limit || s.size > limit - s.offset) {
      return refused(f, "ELF: section " + std::to_string(i) + " (" + hex(s.offset) + " + " + hex(s.size) +
                            ") runs past the image end (" + hex(limit) + ")");
    }
    extent = std::max(extent, s.offset + s.size);
  }
  Bytes image(p, extent);
  if (shstrndx >= shnum || sections[shstrndx].type != kShtStrtab) {
    return refused(f, "ELF: section name table index " + std::to_string(shstrndx) + " is not a string table");
  }
  const Bytes shstr = image.sub(sections[shstrndx].offset, sections[shstrndx].size);

  ModuleImage r;
  r.format = f;
  r.bytes = extent;
  bool haveSymtab = false;
  for (uint64_t i = 0; i < shnum; ++i) {
    const Section& st = sections[i];
    if (st.type != kShtSymtab) continue;
    haveSymtab = true;
    if (st.entsize != kElfSymbolBytes) {
      return refused(f, "ELF: symbol table entry size " + std::to_string(st.entsize) + ", expected 24");
    }
    if (st.link >= shnum || sections[st.link].type != kShtStrtab) {
      return refused(f, "ELF: symbol table " + std::to_string(i) + " links to section " + std::to_string(st.link) +
                            ", not a string table");
    }
    const Bytes syms = image.sub(st.offset, st.size);
    const Bytes names = image.sub(sections[st.link].offset, sections[st.link].size);
    for (uint64_t o = 0; o + kElfSymbolBytes <= syms.size(); o += kElfSymbolBytes) {
      const uint8_t info = syms.at<uint8_t>(o + 4), other = syms.at<uint8_t>(o + 5);
      const uint16_t shndx = syms.at<uint16_t>(o + 6);
      // A kernel in an anonymous namespace (internal linkage) is a local symbol, still an entry;
      // a template's kernel is a weak one in a device-linked (-rdc) cubin (nvlink's output).
      const uint8_t bind = static_cast<uint8_t>(info >> 4);
      if ((info & 0xf) != kSttFunc || (bind != kStbGlobal && bind != kStbLocal && bind != kStbWeak) ||
          !(other & kStoCudaEntry)) {
        continue;
      }
      if (shndx == 0 || shndx >= 0xff00) continue;  // undefined, or a reserved index: not code here
      if (shndx >= shnum) {
        return refused(f, "ELF: symbol " + std::to_string(o / kElfSymbolBytes) + " names section " +
                              std::to_string(shndx) + " of " + std::to_string(shnum));
      }
      const std::optional<std::string> name = stringAt(names, syms.at<uint32_t>(o));
      const std::optional<std::string> secName = stringAt(shstr, sections[shndx].name);
      if (!name || !secName) {
        return refused(f, "ELF: symbol " + std::to_string(o / kElfSymbolBytes) + " has a name outside its string table");
      }
      if (!name->empty() && *secName == ".text." + *name) r.entries.push_back(*name);
    }
  }
  if (!haveSymtab) return refused(f, "ELF: no symbol table");
  sortUnique(r.entries);
  r.ok = true;
  return r;
}

// ---------------------------------------------------------------------------------------------
// fatbin

// ptxOnly: only the PTX entries are decompressed and kept, and no names are read (a relocatable
// object's PTX for linking, docs/nccl.md); its SASS entries are listed, never decompressed.
ModuleImage parseFatbin(const uint8_t* p, size_t size, bool ptxOnly = false) {
  const ImageFormat f = ImageFormat::kFatbin;
  const bool sized = size != kUnknownImageSize;
  if (sized && size < kFatbinHeaderBytes) return refused(f, "fatbin: truncated header (" + std::to_string(size) + " bytes)");
  Bytes head(p, kFatbinHeaderBytes);
  const uint16_t version = head.at<uint16_t>(4), headerBytes = head.at<uint16_t>(6);
  const uint64_t fatSize = head.at<uint64_t>(8);
  if (version != 1) return refused(f, "fatbin: version " + std::to_string(version) + ", expected 1");
  if (headerBytes < kFatbinHeaderBytes) return refused(f, "fatbin: header size " + std::to_string(headerBytes) + " is below 16");
  if (fatSize > kMaxImageBytes) return refused(f, "fatbin: absurd size " + hex(fatSize));
  const uint64_t total = headerBytes + fatSize;
  if (sized && total > size) {
    return refused(f, "fatbin: header says " + std::to_string(total) + " bytes, image has " + std::to_string(size) + " (truncated?)");
  }
  const Bytes image(p, total);

  struct Payload {
    uint64_t offset, size;
    uint64_t rawSize;     // zstd: the decompressed size
    bool zstd, oldScheme;
    uint64_t entry, entryBytes;  // the entry as stored: its header and payload
  };
  ModuleImage r;
  r.format = f;
  r.bytes = total;
  std::vector<Payload> payloads;
  for (uint64_t off = headerBytes; off < total;) {
    if (!image.has(off, kFatbinEntryMinBytes)) return refused(f, "fatbin: entry at " + hex(off) + " is truncated");
    const uint32_t entryHeader = image.at<uint32_t>(off + 4);
    const uint64_t payload = image.at<uint64_t>(off + 8);
    if (entryHeader < kFatbinEntryMinBytes || !image.has(off, entryHeader)) {
      return refused(f, "fatbin: entry at " + hex(off) + " has header size " + std::to_string(entryHeader));
    }
    if (!image.has(off + entryHeader, payload)) {
      return refused(f, "fatbin: entry at " + hex(off) + " claims " + hex(payload) + " payload bytes, past the fatbin's end");
    }
    FatbinVariant v;
    v.kind = image.at<uint16_t>(off);
    v.arch = image.at<uint32_t>(off + 28);
    const uint64_t flags = image.at<uint64_t>(off + 40);
    v.compressed = (flags & (kCompressedOld | kCompressedZstd)) != 0;
    Payload pl{off + entryHeader, payload, 0, false, false, off, entryHeader + payload};
    if (flags & kCompressedZstd) {
      const uint32_t frame = image.at<uint32_t>(off + 16);
      pl.rawSize = image.at<uint64_t>(off + 56);
      if (frame > payload) {
        return refused(f, "fatbin: zstd entry at " + hex(off) + " claims a " + std::to_string(frame) +
                              "-byte frame in a " + std::to_string(payload) + "-byte payload");
      }
      if (pl.rawSize == 0 || pl.rawSize > kMaxDecompressedBytes) {
        return refused(f, "fatbin: zstd entry at " + hex(off) + " claims " + std::to_string(pl.rawSize) +
                              " uncompressed bytes");
      }
      pl.size = frame;
      pl.zstd = true;
    } else if (flags & kCompressedOld) {
      pl.oldScheme = true;
    }
    r.variants.push_back(v);
    payloads.push_back(pl);
    off += entryHeader + payload;
  }

  // Each entry's bytes: as stored, or decompressed (zstd). An entry that cannot be read says why.
  std::vector<std::string> plain(payloads.size());
  std::vector<std::string> unreadable(payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) {
    const Payload& pl = payloads[i];
    if (ptxOnly && r.variants[i].kind != kKindPtx) continue;
    if (pl.oldScheme) {
      unreadable[i] = "compressed with the scheme of CUDA before 12.8 (flag 0x2000), which mcsim does not read "
                      "(rebuild with a newer nvcc, or with --no-compress)";
    } else if (pl.zstd) {
      std::string out(pl.rawSize, '\0');
      const size_t n = ZSTD_decompress(out.data(), out.size(), p + pl.offset, pl.size);
      if (ZSTD_isError(n)) {
        unreadable[i] = std::string("zstd: ") + ZSTD_getErrorName(n);
      } else if (n != pl.rawSize) {
        unreadable[i] = "zstd: decompressed to " + std::to_string(n) + " bytes, the header says " +
                        std::to_string(pl.rawSize);
      } else {
        plain[i] = std::move(out);
      }
    } else {
      plain[i].assign(reinterpret_cast<const char*>(p + pl.offset), pl.size);
    }
  }
  for (size_t i = 0; i < payloads.size(); ++i) {
    if (r.variants[i].kind != kKindPtx || !unreadable[i].empty()) continue;
    // The payload is padded with NULs; the text ends at the first one.
    const size_t len = strnlen(plain[i].data(), plain[i].size());
    r.ptx.push_back(PtxEntry{r.variants[i].arch, plain[i].substr(0, len)});
    r.ptxStored.emplace_back(payloads[i].entry, payloads[i].entryBytes);
  }
  if (ptxOnly) {
    r.ok = true;
    return r;
  }

  // ELF first (what the driver would run), then PTX; within a kind, image order.
  std::string firstError;
  bool anyCode = false, anyReadable = false;
  for (const uint16_t kind : {kKindElf, kKindPtx}) {
    for (size_t i = 0; i < r.variants.size(); ++i) {
      const FatbinVariant& v = r.variants[i];
      if (v.kind != kind) continue;
      anyCode = true;
      if (!unreadable[i].empty()) {
        if (firstError.empty()) {
          firstError = std::string(kind == kKindElf ? "ELF" : "PTX") + " entry " + std::to_string(i) + " (arch " +
                       std::to_string(v.arch) + "): " + unreadable[i];
        }
        continue;
      }
      anyReadable = true;
      const auto* data = reinterpret_cast<const uint8_t*>(plain[i].data());
      const size_t bytes = plain[i].size();
      ModuleImage inner;
      if (kind == kKindElf) {
        if (!startsWith(data, bytes, 0x464C457Fu)) {
          inner = refused(f, "ELF entry does not start with an ELF header");
        } else {
          inner = parseCubin(data, bytes);
        }
      } else {
        // The payload is padded with NULs; the text ends at the first one.
        const size_t len = strnlen(reinterpret_cast<const char*>(data), bytes);
        inner = parsePtx(reinterpret_cast<const char*>(data), len);
      }
      if (inner.ok) {
        r.entries = std::move(inner.entries);
        r.namesFrom = static_cast<int>(i);
        r.ok = true;
        return r;
      }
      if (firstError.empty()) {
        firstError = std::string(kind == kKindElf ? "ELF" : "PTX") + " entry " + std::to_string(i) + " (arch " +
                     std::to_string(v.arch) + "): " + inner.error;
      }
    }
  }
  if (!anyCode) {
    ModuleImage none = refused(f, "fatbin: no PTX or ELF entry among its " + std::to_string(r.variants.size()) + " entries");
    none.noCode = true;
    return none;
  }
  if (!anyReadable) return refused(f, "fatbin: no entry can be read; first problem: " + firstError);
  return refused(f, "fatbin: no readable entry; first problem: " + firstError);
}

// Whether the fatbin at `p` (of unknown size: its header gives the extent) has a PTX entry, from
// its entry headers alone; `ptxBytes` (optional) gets the text bytes of its PTX entries, as the
// headers declare them (decompressed).
bool fatbinHasPtx(const uint8_t* p, uint64_t* ptxBytes = nullptr) {
  if (ptxBytes != nullptr) *ptxBytes = 0;
  bool has = false;
  if (!startsWith(p, kUnknownImageSize, kFatbinMagic)) return false;
  Bytes head(p, kFatbinHeaderBytes);
  const uint16_t headerBytes = head.at<uint16_t>(6);
  const uint64_t fatSize = head.at<uint64_t>(8);
  if (head.at<uint16_t>(4) != 1 || headerBytes < kFatbinHeaderBytes || fatSize > kMaxImageBytes) return false;
  const Bytes image(p, headerBytes + fatSize);
  for (uint64_t off = headerBytes; image.has(off, kFatbinEntryMinBytes);) {
    const uint32_t entryHeader = image.at<uint32_t>(off + 4);
    const uint64_t payload = image.at<uint64_t>(off + 8);
    if (image.at<uint16_t>(off) == kKindPtx) {
      if (ptxBytes == nullptr) return true;
      has = true;
      const uint64_t text = (image.at<uint64_t>(off + 40) & kCompressedZstd) != 0 ? image.at<uint64_t>(off + 56) : payload;
      *ptxBytes += std::min<uint64_t>(text, kMaxDecompressedBytes);
    }
    if (entryHeader < kFatbinEntryMinBytes || !image.has(off, entryHeader) || !image.has(off + entryHeader, payload)) break;
    off += entryHeader + payload;
  }
  return has;
}

}  // namespace

bool prelinkedPtx(const ModuleCode& code, uint32_t cc, std::vector<PtxEntry>* out, std::string* error,
                  std::string* stored) {
  out->clear();
  if (stored != nullptr) stored->clear();
  for (size_t i = 0; i < code.prelinkedFatbins.size(); ++i) {
    const auto* fatbin = static_cast<const uint8_t*>(code.prelinkedFatbins[i]);
    ModuleImage object = parseFatbin(fatbin, kUnknownImageSize, true);
    if (!object.ok) {
      *error = "relocatable object " + std::to_string(i) + ": " + object.error;
      return false;
    }
    ModuleCode c;
    c.ptx = std::move(object.ptx);
    c.variants = std::move(object.variants);
    const PtxEntry* best = bestPtx(c, cc);
    if (best == nullptr) {
      *error = "relocatable object " + std::to_string(i) + " carries no PTX for compute_" + std::to_string(cc);
      return false;
    }
    if (stored != nullptr) {
      // The entry as the image stores it, in a fatbin of its own (readPtxFatbins reads them back).
      const auto [at, bytes] = object.ptxStored[static_cast<size_t>(best - c.ptx.data())];
      uint8_t head[kFatbinHeaderBytes] = {};
      const uint32_t magic = kFatbinMagic;
      const uint16_t version = 1, headerBytes = kFatbinHeaderBytes;
      std::memcpy(head, &magic, 4);
      std::memcpy(head + 4, &version, 2);
      std::memcpy(head + 6, &headerBytes, 2);
      std::memcpy(head + 8, &bytes, 8);
      stored->append(reinterpret_cast<const char*>(head), sizeof head);
      stored->append(reinterpret_cast<const char*>(fatbin + at), bytes);
    }
    out->push_back(*best);
  }
  return true;
}

bool readPtxFatbins(const uint8_t* data, size_t size, size_t maxObjects, uint64_t maxTextBytes,
                    std::vector<PtxEntry>* out, std::string* error) {
  out->clear();
  const Bytes all(data, size);
  // First the headers alone: how many objects and how much text they declare, before anything
  // is decompressed.
  uint64_t text = 0;
  size_t objects = 0;
  for (uint64_t off = 0; off < size; ++objects) {
    uint32_t magic = 0;
    uint16_t version = 0, headerBytes = 0;
    uint64_t fatSize = 0;
    if (!all.get(off, magic) || !all.get(off + 4, version) || !all.get(off + 6, headerBytes) ||
        !all.get(off + 8, fatSize) || magic != kFatbinMagic || version != 1 || headerBytes != kFatbinHeaderBytes) {
      *error = "object " + std::to_string(objects) + " at byte " + std::to_string(off) + ": no fatbin header";
      return false;
    }
    if (objects == maxObjects) {
      *error = "more than " + std::to_string(maxObjects) + " objects";
      return false;
    }
    const uint64_t entry = off + headerBytes;
    uint32_t entryHeader = 0;
    uint64_t payload = 0, flags = 0, raw = 0;
    if (!all.has(entry, fatSize) || !all.get(entry + 4, entryHeader) || !all.get(entry + 8, payload) ||
        !all.get(entry + 40, flags) || !all.get(entry + 56, raw) || uint64_t{entryHeader} + payload != fatSize) {
      *error = "object " + std::to_string(objects) + " at byte " + std::to_string(off) +
               ": not one whole entry (fatbin of " + std::to_string(fatSize) + " bytes)";
      return false;
    }
    const uint64_t declared = (flags & kCompressedZstd) != 0 ? raw : payload;
    if (declared > maxTextBytes - text) {
      *error = "the objects' PTX comes to more than " + std::to_string(maxTextBytes) + " bytes";
      return false;
    }
    text += declared;
    off = entry + fatSize;
  }
  for (uint64_t off = 0; off < size;) {
    const size_t i = out->size();
    ModuleImage object = parseFatbin(data + off, size - off, true);
    if (!object.ok || object.variants.size() != 1 || object.ptx.size() != 1) {
      *error = "object " + std::to_string(i) + ": " +
               (!object.ok ? object.error : "its one entry is no readable PTX");
      return false;
    }
    out->push_back(std::move(object.ptx.front()));
    off += object.bytes;
  }
  return true;
}

namespace {

// The fatbins of one host ELF object, `b`, at `base` of the whole input.
bool objectFatbins(Bytes b, uint64_t base, const std::string& member, std::vector<EmbeddedFatbin>* out,
                   std::string* error) {
  const std::string who = member.empty() ? "the object" : "archive member '" + member + "'";
  if (!b.has(0, kElfHeaderBytes) || b.at<uint8_t>(4) != 2 || b.at<uint8_t>(5) != 1) {
    *error = who + " is not a 64-bit little-endian ELF object";
    return false;
  }
  const uint64_t shoff = b.at<uint64_t>(40);
  const uint16_t shentsize = b.at<uint16_t>(58);
  uint64_t shnum = b.at<uint16_t>(60);
  uint32_t shstrndx = b.at<uint16_t>(62);
  if (shoff == 0 || shentsize != kElfSectionBytes || !b.has(shoff, kElfSectionBytes)) {
    *error = who + ": no readable ELF section header table";
    return false;
  }
  if (shnum == 0) shnum = b.at<uint64_t>(shoff + 32);
  if (shstrndx == 0xffff) shstrndx = b.at<uint32_t>(shoff + 40);
  if (shnum > (b.size() - shoff) / kElfSectionBytes || shstrndx >= shnum) {
    *error = who + ": its " + std::to_string(shnum) + " ELF section headers do not fit in it";
    return false;
  }
  auto section = [&](uint64_t i, uint64_t* off, uint64_t* size) {
    const uint64_t o = shoff + i * kElfSectionBytes;
    *off = b.at<uint64_t>(o + 24);
    *size = b.at<uint64_t>(o + 32);
    return b.at<uint32_t>(o + 4) != kShtNobits && b.has(*off, *size);
  };
  uint64_t strOff = 0, strSize = 0;
  if (!section(shstrndx, &strOff, &strSize)) {
    *error = who + ": its section name table lies outside it";
    return false;
  }
  const Bytes names = b.sub(strOff, strSize);
  for (uint64_t i = 0; i < shnum; ++i) {
    const std::optional<std::string> name = stringAt(names, b.at<uint32_t>(shoff + i * kElfSectionBytes));
    if (!name || (*name != "__nv_relfatbin" && *name != ".nv_fatbin")) continue;
    uint64_t off = 0, size = 0;
    if (!section(i, &off, &size)) {
      *error = who + ": section " + *name + " lies outside it";
      return false;
    }
    for (uint64_t at = 0; at < size;) {
      if (!b.has(off + at, 4) || b.at<uint32_t>(off + at) == 0) {
        at += 8;  // padding between fatbins
        continue;
      }
      if (!b.has(off + at, kFatbinHeaderBytes) || size - at < kFatbinHeaderBytes || b.at<uint32_t>(off + at) != kFatbinMagic) {
        *error = who + ": section " + *name + " holds something other than a fatbin at offset " + hex(at);
        return false;
      }
      const uint64_t total = b.at<uint16_t>(off + at + 6) + b.at<uint64_t>(off + at + 8);
      if (total > size - at) {
        *error = who + ": the fatbin at offset " + hex(at) + " of section " + *name + " runs past its end";
        return false;
      }
      out->push_back(EmbeddedFatbin{member, base + off + at, total});
      at += (total + 7) & ~uint64_t{7};
    }
  }
  return true;
}

}  // namespace

bool hostFatbins(const uint8_t* data, size_t size, std::vector<EmbeddedFatbin>* out, std::string* error) {
  out->clear();
  const Bytes all(data, size);
  if (startsWith(data, size, 0x464C457Fu)) return objectFatbins(all, 0, "", out, error);
  static const char kArchive[] = "!<arch>\n";
  if (size < 8 || std::memcmp(data, kArchive, 8) != 0) {
    *error = "neither a host ELF object nor an ar archive of them";
    return false;
  }
  std::string longNames;
  for (uint64_t at = 8; at < size;) {
    if (!all.has(at, 60) || data[at + 58] != '`' || data[at + 59] != '\n') {
      *error = "archive: a member header at offset " + hex(at) + " is cut short or malformed";
      return false;
    }
    const std::string field(reinterpret_cast<const char*>(data + at + 48), 10);
    uint64_t bytes = 0;
    size_t digits = 0;
    for (char c : field) {
      if (c == ' ') break;
      if (c < '0' || c > '9' || ++digits > 10) {
        *error = "archive: the member at offset " + hex(at) + " has no decimal size";
        return false;
      }
      bytes = bytes * 10 + static_cast<uint64_t>(c - '0');
    }
    if (!all.has(at + 60, bytes)) {
      *error = "archive: the member at offset " + hex(at) + " runs past the archive's end";
      return false;
    }
    std::string name(reinterpret_cast<const char*>(data + at), 16);
    name.erase(name.find_last_not_of(' ') + 1);
    const Bytes member = all.sub(at + 60, bytes);
    if (name == "//") {
      longNames.assign(reinterpret_cast<const char*>(member.data()), bytes);
    } else if (name != "/" && name != "/SYM64/") {
      if (name.size() > 1 && name[0] == '/' && name.find_first_not_of("0123456789", 1) == std::string::npos) {
        const size_t o = std::stoul(name.substr(1));
        if (o < longNames.size()) name = longNames.substr(o, longNames.find_first_of("/\n", o) - o);
      } else if (!name.empty() && name.back() == '/') {
        name.pop_back();
      }
      if (startsWith(member.data(), bytes, 0x464C457Fu) && !objectFatbins(member, at + 60, name, out, error)) return false;
    }
    at += 60 + bytes + (bytes & 1);
  }
  return true;
}

bool sassRunsOn(uint32_t sassArch, uint32_t cc) { return sassArch / 10 == cc / 10 && sassArch <= cc; }

const PtxEntry* bestPtx(const ModuleCode& code, uint32_t cc) {
  const PtxEntry* best = nullptr;
  for (const PtxEntry& e : code.ptx) {
    if (e.arch <= cc && (best == nullptr || e.arch > best->arch)) best = &e;
  }
  if (best != nullptr) return best;
  const bool sassFits = std::any_of(code.variants.begin(), code.variants.end(), [cc](const FatbinVariant& v) {
    return v.kind == kKindElf && sassRunsOn(v.arch, cc);
  });
  if (!sassFits) return nullptr;
  for (const PtxEntry& e : code.ptx) {
    if (best == nullptr || e.arch < best->arch) best = &e;
  }
  return best;
}

const char* imageFormatName(ImageFormat f) {
  switch (f) {
    case ImageFormat::kFatbin: return "fatbin";
    case ImageFormat::kFatbinWrapper: return "fatbin wrapper";
    case ImageFormat::kCubin: return "cubin";
    case ImageFormat::kPtx: return "PTX";
    case ImageFormat::kUnknown: break;
  }
  return "unknown";
}

ModuleImage readModuleImage(const void* image, size_t size) {
  const bool sized = size != kUnknownImageSize;
  if (sized && size == 0) return refused(ImageFormat::kUnknown, "empty image");
  if (!image) return refused(ImageFormat::kUnknown, "no image (null pointer)");
  if (sized && size > kMaxImageBytes) return refused(ImageFormat::kUnknown, "image of " + std::to_string(size) + " bytes is too large");
  const auto* p = static_cast<const uint8_t*>(image);

  if (startsWith(p, size, kFatbinMagic)) return parseFatbin(p, size);
  if (startsWith(p, size, 0x464C457Fu)) return parseCubin(p, size);
  if (startsWith(p, size, kWrapperMagic)) {
    const ImageFormat f = ImageFormat::kFatbinWrapper;
    if (sized) return refused(f, "a __fatBinC_Wrapper_t holds a pointer; it is no image in a file");
    int32_t version = 0;
    const uint8_t* data = nullptr;
    std::memcpy(&version, p + 4, sizeof version);
    std::memcpy(&data, p + 8, sizeof data);
    if (version != 1 && version != 2) return refused(f, "fatbin wrapper: version " + std::to_string(version) + ", expected 1 or 2");
    if (!data) return refused(f, "fatbin wrapper: null fatbin pointer");
    if (!startsWith(data, kUnknownImageSize, kFatbinMagic)) return refused(f, "fatbin wrapper: its pointer does not lead to a fatbin");
    ModuleImage r = parseFatbin(data, kUnknownImageSize);
    r.format = f;
    if (!r.ok) r.error = "fatbin wrapper: " + r.error;
    const void* const* prelinked = nullptr;
    std::memcpy(&prelinked, p + 16, sizeof prelinked);
    if (version == 2 && prelinked != nullptr) {
      // NULL-terminated (crt/link.stub); bounded, as nothing vouches for its length.
      constexpr size_t kMaxPrelinked = size_t{1} << 20;
      for (size_t i = 0; i < kMaxPrelinked; ++i) {
        const void* fatbin = nullptr;
        std::memcpy(&fatbin, prelinked + i, sizeof fatbin);
        if (fatbin == nullptr) break;
        ++r.prelinked;
        r.prelinkedFatbins.push_back(fatbin);
        uint64_t ptxBytes = 0;
        if (fatbinHasPtx(static_cast<const uint8_t*>(fatbin), &ptxBytes)) {
          ++r.prelinkedWithPtx;
          r.prelinkedPtxBytes += ptxBytes;
        }
      }
    }
    return r;
  }

  // Anything else must be PTX text, which ends at its NUL (or at the given size).
  const size_t len = strnlen(reinterpret_cast<const char*>(p), sized ? size : kMaxImageBytes);
  if (len == 0) return refused(ImageFormat::kUnknown, "empty image");
  if (!sized && len == kMaxImageBytes) return refused(ImageFormat::kUnknown, "no NUL within the first 4 GiB of a text image");
  ModuleImage r = parsePtx(reinterpret_cast<const char*>(p), len);
  if (r.ok) r.ptx.push_back(PtxEntry{0, std::string(reinterpret_cast<const char*>(p), len)});
  if (!r.ok && r.format == ImageFormat::kUnknown) {
    std::string first;
    for (size_t i = 0; i < 4 && i < len; ++i) first += (i ? " " : "") + hex(p[i]).substr(2);
    r.error = "not a fatbin (magic 0xBA55ED50), cubin (ELF), fatbin wrapper or PTX text (.version first); "
              "starts with bytes " + first;
  }
  return r;
}

}  // namespace mcsim::driver
