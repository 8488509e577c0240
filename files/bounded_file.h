// Reads a whole file named by a user or a program (a preset, a fault plan, a trace, a module
// image) into memory, refusing what is no regular file or is larger than the reader's bound.
// A directory, a device (/dev/zero reads for ever), a FIFO (blocks) or a file that grows past the
// bound while it is read is refused with a reason, never read without end and never thrown
// about: every reader of such files goes through here (docs/reliability.md, "Bad files").
#pragma once

#include <cstdint>
#include <string>

namespace mcsim::files {

enum class ReadProblem {
  kNone,
  kMissing,     // no such file, or it cannot be opened (permissions)
  kDirectory,   // a directory
  kNotRegular,  // a device, FIFO or socket
  kTooLarge,    // more than the bound
  kUnreadable,  // a read failed
};

struct FileRead {
  ReadProblem problem = ReadProblem::kNone;
  std::string why;    // "" or the reason, in words, naming the path
  std::string bytes;  // the file's bytes when problem == kNone
  bool ok() const { return problem == ReadProblem::kNone; }
};

// The whole of the regular file at `path`, at most `maxBytes` bytes. Opening never blocks (a FIFO
// is opened non-blocking and then refused).
FileRead readBoundedFile(const std::string& path, uint64_t maxBytes);

// Bounds of the readers, in one place (docs/reliability.md).
constexpr uint64_t kMaxTextInputBytes = uint64_t{64} << 20;  // presets and fault plans: 64 MiB
constexpr uint64_t kMaxTraceBytes = uint64_t{4} << 30;       // traces: 4 GiB

}  // namespace mcsim::files
