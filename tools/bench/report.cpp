#include "report.h"

#include <cuda.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>

namespace mcsim::bench {

std::string ncclTestsTime(double us) {
  char text[32];
  std::snprintf(text, sizeof text, us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f", us);
  return text;
}

uint64_t ncclTestsWordBytes(const std::string& type) {
  if (type == "half" || type == "bfloat16") return 2;
  if (type == "double" || type == "uint64" || type == "int64") return 8;
  return 4;
}

void Report::begin() {
  if (o_.format == Format::kPlain) {
    std::printf("bytes time_us algbw_GBps busbw_GBps\n");
    return;
  }
  const bool factor = o_.stepFactor > 1;
  std::printf("# nThread 1 nGpus %d minBytes %" PRIu64 " maxBytes %" PRIu64 " step: %" PRIu64
              "(%s) warmup iters: %d iters: %d agg iters: 1 validation: %d graph: 0\n",
              gpus_.size(), o_.minBytes, o_.maxBytes, factor ? o_.stepFactor : o_.stepBytes, factor ? "factor" : "bytes",
              o_.warmups, o_.iters, o_.check ? 1 : 0);
  std::printf("#\n# Using devices\n");
  char host[256] = "mcsim";
  gethostname(host, sizeof host - 1);
  for (int g = 0; g < gpus_.size(); ++g) {
    int bus = 0;
    cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, gpus_[g].dev);
    std::printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s\n", g, 0, static_cast<int>(getpid()), host,
                static_cast<int>(gpus_[g].dev), bus, gpus_.name().c_str());
  }
  std::printf("#\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "", "",
              "");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type", "redop",
              "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "", "",
              "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);
}

void Report::row(uint64_t bytes, double us, int64_t wrong) {
  const double n = gpus_.size();
  const double algbw = static_cast<double>(bytes) / (us * 1e3);  // GB/s, GB = 1e9 bytes
  const double busbw = algbw * 2 * (n - 1) / n;
  if (o_.format == Format::kPlain) {
    std::printf("%" PRIu64 " %.3f %.3f %.3f\n", bytes, us, algbw, busbw);
    std::fflush(stdout);
    return;
  }
  busbwSum_ += busbw;
  ++cells_;
  if (wrong > 0) ++failedCells_;
  char measured[96], absent[64];
  const std::string wrongText = wrong < 0 ? "N/A" : std::to_string(wrong);
  std::snprintf(measured, sizeof measured, "  %7s  %6.2f  %6.2f  %5s", ncclTestsTime(us).c_str(), algbw, busbw,
                wrongText.c_str());
  std::snprintf(absent, sizeof absent, "  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A");
  std::printf("%12" PRIu64 "  %12" PRIu64 "  %8s  %6s  %6i%s%s\n", bytes, bytes / ncclTestsWordBytes(o_.ncclTypeName),
              o_.ncclTypeName.c_str(), "sum", -1, place_ == Place::kOutOfPlace ? measured : absent,
              place_ == Place::kInPlace ? measured : absent);
  std::fflush(stdout);
}

void Report::end() {
  if (o_.format == Format::kPlain) return;
  std::printf("# Out of bounds values : %d %s\n", failedCells_, failedCells_ != 0 ? "FAILED" : "OK");
  std::printf("# Avg bus bandwidth    : %g \n", cells_ != 0 ? busbwSum_ / cells_ : 0.0);
  std::printf("#\n");
}

}  // namespace mcsim::bench
