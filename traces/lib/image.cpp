#include "traces/lib/image.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "files/bounded_file.h"
#include "mcsim/kernels.h"
#include "traces/lib/codec.h"

namespace mcsim::trace {

namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr uint32_t kWrapperMagic = 0x466243B1u;
constexpr uint32_t kElfMagic = 0x464C457Fu;
constexpr uint64_t kPage = 4096;

template <typename T>
bool readAt(uint64_t addr, T* v) {
  return safeRead(addr, v, sizeof(T));
}

std::string formatOf(const uint8_t* p, size_t n) {
  uint32_t magic = 0;
  if (n >= 4) std::memcpy(&magic, p, 4);
  if (magic == kFatbinMagic) return "fatbin";
  if (magic == kWrapperMagic) return "fatbin_wrapper";
  if (magic == kElfMagic) return "cubin";
  return "text";
}

ImageBytes unreadable(std::string why) {
  ImageBytes r;
  r.problem = std::move(why);
  return r;
}

ImageBytes copy(uint64_t addr, uint64_t n, const char* format) {
  if (n > kMaxTraceImageBytes) return unreadable("the image's headers give " + std::to_string(n) + " bytes, more than a trace holds");
  ImageBytes r;
  r.bytes.resize(static_cast<size_t>(n));
  if (!safeRead(addr, r.bytes.data(), r.bytes.size())) return unreadable("the image's bytes are not all readable");
  r.readable = true;
  r.format = format;
  return r;
}

// A fatbin: a 16-byte header (magic, version, header size, size of what follows).
ImageBytes fatbinAt(uint64_t addr) {
  uint16_t headerBytes = 0;
  uint64_t rest = 0;
  if (!readAt(addr + 6, &headerBytes) || !readAt(addr + 8, &rest)) return unreadable("truncated fatbin header");
  if (rest > kMaxTraceImageBytes) return unreadable("the fatbin header gives an absurd size");
  return copy(addr, uint64_t{headerBytes} + rest, "fatbin");
}

// An ELF image: everything its section and program header tables cover.
ImageBytes elfAt(uint64_t addr) {
  uint8_t head[64];
  if (!safeRead(addr, head, sizeof head)) return unreadable("truncated ELF header");
  uint64_t phoff, shoff;
  uint16_t phentsize, phnum, shentsize, shnum16;
  std::memcpy(&phoff, head + 32, 8);
  std::memcpy(&shoff, head + 40, 8);
  std::memcpy(&phentsize, head + 54, 2);
  std::memcpy(&phnum, head + 56, 2);
  std::memcpy(&shentsize, head + 58, 2);
  std::memcpy(&shnum16, head + 60, 2);
  uint64_t extent = sizeof head;
  if (phoff != 0 && phnum != 0) extent = std::max(extent, phoff + uint64_t{phnum} * phentsize);
  if (shoff != 0 && shentsize == 64) {
    uint64_t shnum = shnum16;
    if (shnum == 0 && !readAt(addr + shoff + 32, &shnum)) return unreadable("unreadable ELF section 0");
    if (shnum > (kMaxTraceImageBytes / 64)) return unreadable("absurd ELF section count");
    extent = std::max(extent, shoff + shnum * 64);
    for (uint64_t i = 0; i < shnum; ++i) {
      uint32_t type = 0;
      uint64_t offset = 0, size = 0;
      const uint64_t at = addr + shoff + i * 64;
      if (!readAt(at + 4, &type) || !readAt(at + 24, &offset) || !readAt(at + 32, &size)) {
        return unreadable("unreadable ELF section header");
      }
      if (type == 0 || type == 8 /* SHT_NOBITS */) continue;
      if (offset > kMaxTraceImageBytes || size > kMaxTraceImageBytes) return unreadable("an ELF section lies past any image");
      extent = std::max(extent, offset + size);
    }
  }
  return copy(addr, extent, "cubin");
}

// Text: up to and including its NUL, read a page at a time so that the last readable page ends it.
ImageBytes textAt(uint64_t addr) {
  ImageBytes r;
  uint8_t page[kPage];
  for (uint64_t at = addr; at - addr < kMaxTraceImageBytes;) {
    const size_t len = static_cast<size_t>(kPage - at % kPage);
    if (!safeRead(at, page, len)) return unreadable("the text image has no readable NUL");
    const void* nul = std::memchr(page, 0, len);
    const size_t take = nul != nullptr ? static_cast<size_t>(static_cast<const uint8_t*>(nul) - page) + 1 : len;
    r.bytes.insert(r.bytes.end(), page, page + take);
    if (nul != nullptr) {
      r.readable = true;
      r.format = "text";
      return r;
    }
    at += len;
  }
  return unreadable("no NUL within the text image's first 1 GiB");
}

}  // namespace

bool safeRead(uint64_t addr, void* out, size_t n) {
  if (n == 0) return true;
  if (addr == 0) return false;
  auto* dst = static_cast<uint8_t*>(out);
  for (size_t done = 0; done < n;) {
    iovec local{dst + done, n - done};
    iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(addr + done)), n - done};
    const ssize_t got = ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
  }
  return true;
}

ImageBytes readImageAt(uint64_t addr) {
  if (addr == 0) return unreadable("null image");
  uint32_t magic = 0;
  uint8_t first = 0;
  if (!readAt(addr, &first)) return unreadable("the image pointer is not readable");
  if (!readAt(addr, &magic)) return textAt(addr);  // fewer than 4 readable bytes: a short string at most
  if (magic == kFatbinMagic) return fatbinAt(addr);
  if (magic == kElfMagic) return elfAt(addr);
  if (magic == kWrapperMagic) {
    int32_t version = 0;
    uint64_t fatbin = 0;
    uint32_t inner = 0;
    if (!readAt(addr + 4, &version) || !readAt(addr + 8, &fatbin)) return unreadable("truncated fatbin wrapper");
    if (!readAt(fatbin, &inner) || inner != kFatbinMagic) return unreadable("the fatbin wrapper does not point at a fatbin");
    ImageBytes r = fatbinAt(fatbin);
    if (r.readable) {
      r.format = "fatbin_wrapper";
      r.wrapperVersion = version;
    }
    return r;
  }
  return textAt(addr);
}

ImageBytes readImageFile(const std::string& path) {
  // Regular files only, and of a size a trace holds (never a device or a pipe that reads forever).
  files::FileRead read = files::readBoundedFile(path, kMaxTraceImageBytes);
  if (!read.ok()) return unreadable(read.why);
  ImageBytes r;
  r.bytes.assign(read.bytes.begin(), read.bytes.end());
  r.readable = true;
  r.format = formatOf(r.bytes.data(), r.bytes.size());
  return r;
}

const void* kernelLibraryImage() { return mcsim_kernel_image; }

const ImageBytes& kernelLibraryRead() {
  static const ImageBytes r = readImageAt(reinterpret_cast<uintptr_t>(mcsim_kernel_image));
  return r;
}

const std::string& kernelLibraryDigest() {
  static const std::string d = digestHex(kernelLibraryRead().bytes.data(), kernelLibraryRead().bytes.size());
  return d;
}

}  // namespace mcsim::trace
