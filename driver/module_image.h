// Reads the kernel entry names out of a module image: what a program hands cuModuleLoadData,
// cuLibraryLoadData or cuModuleLoadFatBinary, or the bytes of the file it names to cuModuleLoad.
// A pure function of the bytes, with no driver state: the driver decides what the names mean.
//
// Formats recognised:
//  - a fatbin (magic 0xBA55ED50): its entries are PTX or ELF code for one architecture each; the
//    names come from the first readable ELF entry, else the first PTX entry. Entries compressed
//    with zstd (what nvcc 12.8 and newer write by default) are decompressed; the older scheme
//    (flag 0x2000) is not read. Every PTX entry's text is kept, for the executor (docs/ptx.md).
//  - the __fatBinC_Wrapper_t that points at a fatbin (magic 0x466243B1, fatbinary_section.h), in
//    memory only: it holds a pointer. Version 2 (a device-linked -rdc image) also points at the
//    list of relocatable fatbins it was linked from (crt/link.stub); they are counted, not read.
//  - a cubin (an ELF64 image for EM_CUDA): the entries are its global STT_FUNC symbols carrying
//    the entry flag, each in a section named .text.<name>.
//  - PTX text (starting with a .version directive): the names after `.entry`.
//
// The bytes come from programs mcsim does not control, so every read is bounds-checked and every
// malformed image is refused with a reason; nothing here may crash on any input of known size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mcsim::driver {

enum class ImageFormat { kUnknown, kFatbin, kFatbinWrapper, kCubin, kPtx };

const char* imageFormatName(ImageFormat f);

// One code entry of a fatbin.
struct FatbinVariant {
  uint16_t kind = 0;       // 1 PTX, 2 ELF (others are listed but not read)
  uint32_t arch = 0;       // e.g. 90 for sm_90 / compute_90
  bool compressed = false;
};

// PTX text an image carries, with the virtual architecture it was written for (compute_90: 90;
// 0 for PTX text loaded as such, which names its target itself).
struct PtxEntry {
  uint32_t arch = 0;
  std::string text;
};

struct ModuleImage {
  bool ok = false;
  std::string error;                  // why the image was refused, when !ok
  // Refused because it is a well-formed fatbin with no PTX or ELF entry: code for no device at
  // all (what nvlink writes for a -rdc program built with PTX only: the CUDA runtime then links
  // the relocatable objects itself, with cuLink*).
  bool noCode = false;
  ImageFormat format = ImageFormat::kUnknown;
  std::vector<std::string> entries;   // kernel entry names, sorted, each once
  size_t bytes = 0;                   // the image's extent as read (headers when no size given)
  // For fatbins: every entry in image order, and which one the names came from.
  std::vector<FatbinVariant> variants;
  int namesFrom = -1;                 // index into variants, -1 when not a fatbin
  std::vector<PtxEntry> ptx;          // every PTX entry (a fatbin's in image order), decompressed
  // For a fatbin's: where each of `ptx` is stored (its entry header and payload, as offset and
  // bytes from the fatbin's start).
  std::vector<std::pair<uint64_t, uint64_t>> ptxStored;
  // A version-2 wrapper (FATBINC_LINK_VERSION: a device-linked -rdc image): how many relocatable
  // fatbins its NULL-terminated list of prelinked objects names, and how many of those carry PTX
  // (read from their entry headers; nothing of them is decompressed or parsed).
  size_t prelinked = 0;
  size_t prelinkedWithPtx = 0;
  uint64_t prelinkedPtxBytes = 0;  // the text bytes of their PTX entries, as the headers declare them
  // Their fatbins, as the list names them (memory of the program's own image, which stays mapped).
  std::vector<const void*> prelinkedFatbins;
};

// What of an image the simulator can run: its PTX entries, and its fatbin entries (to know for
// which architectures it carries SASS).
struct ModuleCode {
  std::vector<PtxEntry> ptx;
  std::vector<FatbinVariant> variants;
  size_t prelinked = 0, prelinkedWithPtx = 0;  // as ModuleImage's
  std::vector<const void*> prelinkedFatbins;
};

// The PTX of each of `code`'s prelinked relocatable objects that fits a device of compute
// capability `cc` (bestPtx's rule), decompressed (their SASS is not): what linking them takes
// (ptx/linker.h, docs/nccl.md). False with `error` when an object cannot be read or has none.
// `stored`, when given, gets those entries as the image stores them (compressed), each in a
// fatbin of its own, one after the other: what a driver sends a shared node (readPtxFatbins).
bool prelinkedPtx(const ModuleCode& code, uint32_t cc, std::vector<PtxEntry>* out, std::string* error,
                  std::string* stored = nullptr);

// Reads `size` bytes of fatbins of one PTX entry each (prelinkedPtx's `stored`), from anyone:
// every object must be a fatbin header and one whole PTX entry, at most `maxObjects` of them, whose
// headers declare at most `maxTextBytes` of text in all (checked before anything is decompressed).
// False with `error` naming the object otherwise.
bool readPtxFatbins(const uint8_t* data, size_t size, size_t maxObjects, uint64_t maxTextBytes,
                    std::vector<PtxEntry>* out, std::string* error);

// A fatbin a host object embeds for the device (hostFatbins): `bytes` bytes at `offset` of the
// data given, from `member` (an archive's member name; "" for an object given alone).
struct EmbeddedFatbin {
  std::string member;
  uint64_t offset = 0, bytes = 0;
};

// The fatbins a host object carries: an ELF64 relocatable object for the host (what `nvcc -c` or
// `nvcc -dc` writes), or an `ar` archive of them (a static library: libcudadevrt.a). The device
// code is in the object's `__nv_relfatbin` (relocatable, -rdc) and `.nv_fatbin` sections, each a
// run of whole fatbins (header and entries; zero padding between them is skipped). What the
// driver's JIT linker takes as CU_JIT_INPUT_OBJECT and CU_JIT_INPUT_LIBRARY. False with `error`
// when the bytes are neither, or a section's content is not fatbins; an object without device
// code yields none.
bool hostFatbins(const uint8_t* data, size_t size, std::vector<EmbeddedFatbin>* out, std::string* error);

// The PTX entry a device of compute capability `cc` (90 for 9.0) runs: the highest virtual
// architecture not above it, as the real driver JIT-compiles. Where there is none but the image
// carries SASS the device runs (a real GPU would run that SASS, which mcsim cannot), the PTX of the
// lowest architecture above `cc`: the same kernels from the same source, for a newer target (NCCL
// ships PTX for compute_120 only, beside SASS for sm_75 to sm_120). nullptr when neither applies.
const PtxEntry* bestPtx(const ModuleCode& code, uint32_t cc);

// Whether SASS built for `sassArch` runs on a device of compute capability `cc`: the same major
// version and a minor version not above the device's (CUDA C++ Programming Guide, "Binary
// Compatibility").
bool sassRunsOn(uint32_t sassArch, uint32_t cc);

// `size` bytes are readable at `image`. kUnknownImageSize: a pointer passed without a size
// (cuModuleLoadData and friends); the extent is then taken from the image's own headers (fatbin
// header, ELF header and section table, PTX's terminating NUL), trusted as a real driver trusts
// them, up to kMaxImageBytes.
constexpr size_t kUnknownImageSize = SIZE_MAX;
constexpr size_t kMaxImageBytes = size_t{1} << 32;

ModuleImage readModuleImage(const void* image, size_t size = kUnknownImageSize);

}  // namespace mcsim::driver
