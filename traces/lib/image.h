// Module images in traces. The recorder copies the image a program hands cuModuleLoadData,
// cuModuleLoadDataEx, cuModuleLoadFatBinary or cuLibraryLoadData out of the program's memory: the
// driver is given a bare pointer, so the image's extent comes from its own headers (a fatbin's
// header, an ELF's section and program header tables, PTX's terminating NUL), read with
// process_vm_readv so that a bad pointer makes the image "unreadable" rather than crashing the
// recorder. The replayer rebuilds the bytes (and, for a __fatBinC_Wrapper_t, the wrapper).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mcsim::trace {

// Copies [addr, addr + n) of this process; false when any byte is unreadable.
bool safeRead(uint64_t addr, void* out, size_t n);

constexpr uint64_t kMaxTraceImageBytes = uint64_t{1} << 30;  // a larger image is not recorded

struct ImageBytes {
  bool readable = false;
  std::string format;      // "fatbin", "fatbin_wrapper", "cubin", "text"
  int wrapperVersion = 0;  // fatbin_wrapper: the wrapper's version field
  std::vector<uint8_t> bytes;  // the image (for a wrapper: the fatbin it points at); text ends in its NUL
  std::string problem;     // why not readable
};

// The image at `addr` as the driver would take it.
ImageBytes readImageAt(uint64_t addr);
// The bytes of a file (cuModuleLoad's and cuLibraryLoadFromFile's image), with the format their
// first bytes show; not readable when the file cannot be opened.
ImageBytes readImageFile(const std::string& path);

// mcsim's own kernel library image (include/mcsim/kernels.h), which traces name rather than copy:
// its address, and what the recorder reads there (format, extent, digest).
const void* kernelLibraryImage();
const ImageBytes& kernelLibraryRead();
const std::string& kernelLibraryDigest();
constexpr const char* kKernelLibraryName = "mcsim_kernels";

}  // namespace mcsim::trace
