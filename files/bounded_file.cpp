#include "files/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

namespace mcsim::files {

namespace {

FileRead refused(ReadProblem p, std::string why) {
  FileRead r;
  r.problem = p;
  r.why = std::move(why);
  return r;
}

// Closes the descriptor on every way out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

FileRead readBoundedFile(const std::string& path, uint64_t maxBytes) {
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait for one. The checks below
  // look at what was opened (fstat), not at the name, so that nothing can be swapped in between.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) {
    if (errno == EISDIR) return refused(ReadProblem::kDirectory, path + " is a directory");
    return refused(ReadProblem::kMissing, "cannot open " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return refused(ReadProblem::kUnreadable, "cannot stat " + path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return refused(ReadProblem::kDirectory, path + " is a directory");
  if (!S_ISREG(st.st_mode)) return refused(ReadProblem::kNotRegular, path + " is not a regular file");
  const auto tooLarge = [&] {
    return refused(ReadProblem::kTooLarge, path + " is larger than " + std::to_string(maxBytes) + " bytes");
  };
  if (static_cast<uint64_t>(st.st_size) > maxBytes) return tooLarge();
  FileRead r;
  r.bytes.resize(static_cast<size_t>(st.st_size));
  size_t have = 0;
  // Until end of file: a file that grew since fstat is read on, up to the bound and one byte more
  // (which tells that it is over).
  for (;;) {
    if (have == r.bytes.size()) {
      if (have > maxBytes) return tooLarge();
      r.bytes.resize(static_cast<size_t>(std::min<uint64_t>(maxBytes + 1, have + (uint64_t{1} << 16))));
    }
    const ssize_t n = ::read(f.fd, &r.bytes[have], r.bytes.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return refused(ReadProblem::kUnreadable, "cannot read " + path + ": " + std::strerror(errno));
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  if (have > maxBytes) return tooLarge();
  r.bytes.resize(have);
  return r;
}

}  // namespace mcsim::files
