// The benchmarks' main: Google Benchmark's, with defaults that print medians of five
// repetitions and keep a whole run short on a small machine. Flags given on the command line
// come later in argv and so override these.
#include <benchmark/benchmark.h>

#include <vector>

namespace {

const char* const kDefaults[] = {
    "--benchmark_min_time=0.2",
    "--benchmark_repetitions=5",
    "--benchmark_report_aggregates_only=true",
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args{argv[0]};
  for (const char* flag : kDefaults) args.push_back(const_cast<char*>(flag));
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  int count = static_cast<int>(args.size());
  args.push_back(nullptr);

  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
