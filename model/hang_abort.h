// MCSIM_ON_HANG=abort: what the process writes before it aborts on a reported deadlock or hang.
//
// An abort runs no exit handlers, so the files a program's run leaves are finished here instead:
// the trace gets its end record (MCSIM_RECORD; a replay and `mcsim minimize --until deadlock`
// read it) and the timeline is written (MCSIM_TIMELINE). Each writer registers itself when it
// starts; the report's sites call abortOnHang() in place of std::abort(). Header-only, so that the
// recorder (in both libcuda.so.1 variants) and the driver register in one list per library.
#pragma once

#include <cstdlib>
#include <mutex>
#include <vector>

namespace mcsim::model {

struct HangAbortWriters {
  std::mutex mu;
  std::vector<void (*)()> writers;
};

inline HangAbortWriters& hangAbortWriters() {
  static HangAbortWriters* w = new HangAbortWriters();  // leaked: used while the process dies
  return *w;
}

// `write` runs (once, in registration order) before the process aborts on a hang.
inline void beforeHangAbort(void (*write)()) {
  HangAbortWriters& w = hangAbortWriters();
  std::lock_guard<std::mutex> lock(w.mu);
  w.writers.push_back(write);
}

[[noreturn]] inline void abortOnHang() {
  HangAbortWriters& w = hangAbortWriters();
  std::vector<void (*)()> writers;
  {
    std::lock_guard<std::mutex> lock(w.mu);
    writers.swap(w.writers);  // a second report (another thread) aborts without writing again
  }
  for (void (*write)() : writers) write();
  std::abort();
}

}  // namespace mcsim::model
