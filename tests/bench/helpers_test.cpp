// The all-reduce benchmark's pure helpers: its command line, the launch shapes it takes from
// PyTorch and NCCL, the ring's chunks, and the check's reference data.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "launch_shapes.h"
#include "mcsim/kernels.h"
#include "options.h"
#include "reference.h"

namespace mcsim::bench {
namespace {

bool parse(std::vector<std::string> args, Options* o, std::string* error) {
  args.insert(args.begin(), "mcsim_bench_allreduce");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  bool help = false;
  return parseOptions(static_cast<int>(argv.size()), argv.data(), o, error, &help);
}

TEST(BenchOptions, SizesTakeBinaryUnits) {
  std::vector<uint64_t> sizes;
  std::string error;
  ASSERT_TRUE(parseSizeList("4096,512K,2M,1G,3MiB,1GB,1.5M", &sizes, &error)) << error;
  EXPECT_EQ(sizes, (std::vector<uint64_t>{4096, 512 << 10, 2 << 20, 1 << 30, 3 << 20, 1 << 30, 3 << 19}));
  for (const char* bad : {"", "0", "1X", "K", "1,", "-1", "1.1B", "0.1K", "99999999999999999999"}) {
    EXPECT_FALSE(parseSizeList(bad, &sizes, &error)) << bad;
  }
}

TEST(BenchOptions, ParsesEveryOption) {
  Options o;
  std::string error;
  ASSERT_TRUE(parse({"--gpus", "4", "--algo=ring", "--sizes", "64K,1M", "--dtype", "bf16", "--iters", "3", "--check",
                     "--loader", "library"},
                    &o, &error))
      << error;
  EXPECT_EQ(o.gpus, 4);
  EXPECT_EQ(o.algo, Algo::kRing);
  EXPECT_EQ(o.sizes, (std::vector<uint64_t>{64 << 10, 1 << 20}));
  EXPECT_EQ(o.dtype, uint32_t{MCSIM_DTYPE_BF16X2});
  EXPECT_EQ(o.iters, 3);
  EXPECT_TRUE(o.check);
  EXPECT_EQ(o.loader, Loader::kLibrary);
}

// nccl-tests' options (its src/common.cu): -b/-e with -f (a factor) or -i (a step, 1 MiB by
// default), -n, -w, -c, -o, -d with its type names, -g.
TEST(BenchOptions, TakesNcclTestsOptions) {
  Options o;
  std::string error;
  ASSERT_TRUE(parse({"-b", "8", "-e", "128", "-f", "2", "-n", "3", "-w", "0", "-c", "1", "-o", "sum", "-d", "half", "-g",
                     "2", "--format", "plain"},
                    &o, &error))
      << error;
  EXPECT_EQ(o.sizes, (std::vector<uint64_t>{8, 16, 32, 64, 128}));
  EXPECT_EQ(o.minBytes, 8u);
  EXPECT_EQ(o.maxBytes, 128u);
  EXPECT_EQ(o.stepFactor, 2u);
  EXPECT_EQ(o.iters, 3);
  EXPECT_EQ(o.warmups, 0);
  EXPECT_TRUE(o.check);
  EXPECT_EQ(o.dtype, uint32_t{MCSIM_DTYPE_F16X2});
  EXPECT_EQ(o.ncclTypeName, "half");
  EXPECT_EQ(o.gpus, 2);
  EXPECT_EQ(o.format, Format::kPlain);

  Options steps;
  ASSERT_TRUE(parse({"-b", "1M", "-e", "3M"}, &steps, &error)) << error;
  EXPECT_EQ(steps.sizes, (std::vector<uint64_t>{1 << 20, 2 << 20, 3 << 20}));
  EXPECT_EQ(steps.format, Format::kNcclTests);
  Options step512;
  ASSERT_TRUE(parse({"-b", "512K", "-e", "1M", "-i", "256K"}, &step512, &error)) << error;
  EXPECT_EQ(step512.sizes, (std::vector<uint64_t>{512 << 10, 768 << 10, 1 << 20}));
  Options one;
  ASSERT_TRUE(parse({"-b", "64K"}, &one, &error)) << error;
  EXPECT_EQ(one.sizes, (std::vector<uint64_t>{64 << 10}));
}

TEST(BenchOptions, RefusesWithAMessage) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--algo", "nvlz"}, "unknown algorithm 'nvlz'"},
      {{"--dtype", "f8"}, "unknown type 'f8'"},
      {{"--gpus", "0"}, "--gpus"},
      {{"--iters"}, "--iters needs a value"},
      {{"--dtype", "f64", "--sizes", "12"}, "not a whole number of f64 elements"},
      {{"--frobnicate", "1"}, "unknown option '--frobnicate'"},
      {{"-o", "prod"}, "reduce with sum only"},
      {{"-b", "2M", "-e", "1M"}, "is more than -e"},
      {{"--sizes", "1M", "-b", "1M"}, "use one"},
      {{"-f", "2"}, "give -b"},
      {{"-c", "2"}, "neither 0 nor 1"},
      {{"--format", "csv"}, "neither nccl-tests nor plain"},
  };
  for (const auto& [args, message] : cases) {
    Options o;
    std::string error;
    EXPECT_FALSE(parse(args, &o, &error)) << args[0];
    EXPECT_NE(error.find(message), std::string::npos) << error;
  }
}

TEST(LaunchShapes, PyTorchMultimem) {
  // 64 KiB of f32: 16384 elements, 4 per 128-bit access. One-shot: 4096 threads' worth, so 4
  // blocks of 1024; two-shot over 8 GPUs: 2048 elements each, one block of 512.
  EXPECT_EQ(pytorchMultimemShape(16384, MCSIM_DTYPE_F32, 1).blocks, 4u);
  EXPECT_EQ(pytorchMultimemShape(16384, MCSIM_DTYPE_F32, 1).threads, 1024u);
  EXPECT_EQ(pytorchMultimemShape(16384, MCSIM_DTYPE_F32, 8).blocks, 1u);
  EXPECT_EQ(pytorchMultimemShape(16384, MCSIM_DTYPE_F32, 8).threads, 512u);
  // Large: at most 8 blocks of 1024.
  EXPECT_EQ(pytorchMultimemShape(uint64_t{1} << 28, MCSIM_DTYPE_F32, 8).blocks, 8u);
  // Small: a warp at least. 1000 u32 (4000 bytes) take 128-bit accesses: 252 threads, rounded
  // to 256; 1001 u32 (4004 bytes) fall back to 4-byte accesses: 1004 threads, rounded to 1024.
  EXPECT_EQ(pytorchMultimemShape(1, MCSIM_DTYPE_F32, 1).threads, 32u);
  EXPECT_EQ(pytorchMultimemShape(1000, MCSIM_DTYPE_U32, 1).threads, 256u);
  EXPECT_EQ(pytorchMultimemShape(1001, MCSIM_DTYPE_U32, 1).threads, 1024u);
  EXPECT_EQ(pytorchMultimemShape(1001, MCSIM_DTYPE_U32, 1).blocks, 1u);
}

TEST(LaunchShapes, NcclNvlsAndRing) {
  EXPECT_EQ(ncclNvlsShape(9).blocks, 16u);
  EXPECT_EQ(ncclNvlsShape(10).blocks, 24u);
  EXPECT_EQ(ncclNvlsShape(9).threads, 640u);
  EXPECT_EQ(kRingShape.blocks, 24u);
  EXPECT_EQ(kRingShape.threads, 512u);
}

// NCCL's NVLS chunk rule (src/enqueue.cc) and warp split (src/device/all_reduce.h).
TEST(LaunchShapes, NcclNvlsPipeline) {
  constexpr uint64_t MiB = uint64_t{1} << 20, GiB = uint64_t{1} << 30;
  // 8x H100, 16 channels: 128 KiB chunks from 64 x 16 x 8 x 128 KiB = 1 GiB on, 64 KiB below.
  NvlsPipeline h = ncclNvlsPipeline(GiB, 8, ncclNvlsShape(9));
  EXPECT_EQ(h.chunkBytes, 128u * 1024);
  EXPECT_EQ(h.iterationBytes, 16 * MiB);
  EXPECT_EQ(h.fillBytes, 16 * MiB);
  EXPECT_EQ(h.drainBytes, 16 * MiB);
  EXPECT_EQ(ncclNvlsPipeline(GiB - 1, 8, ncclNvlsShape(9)).chunkBytes, 64u * 1024);
  EXPECT_EQ(h.scatter.blocks, 16u);
  EXPECT_EQ(h.scatter.threads, 8u * 32);  // 20 warps: 5 reduce, 8 scatter, 7 gather
  EXPECT_EQ(h.gather.threads, 7u * 32);
  const NvlsPipeline small = ncclNvlsPipeline(256 * MiB, 6, ncclNvlsShape(9));
  EXPECT_EQ(small.scatter.threads, 7u * 32);  // n <= 6: 7 reduce, 7 scatter, 6 gather
  EXPECT_EQ(small.gather.threads, 6u * 32);
  // 72 GPUs, 24 channels: 64 KiB chunks up to 64 x 24 x 72 x 128 KiB = 13.5 GiB, 32 KiB under
  // 8 x 24 x 72 x 64 KiB = 864 MiB, 16 KiB under 2 x 24 x 72 x 32 KiB = 108 MiB.
  EXPECT_EQ(ncclNvlsPipeline(4 * GiB, 72, ncclNvlsShape(10)).chunkBytes, 64u * 1024);
  EXPECT_EQ(ncclNvlsPipeline(4 * GiB, 72, ncclNvlsShape(10)).iterationBytes, 108 * MiB);
  EXPECT_EQ(ncclNvlsPipeline(864 * MiB, 72, ncclNvlsShape(10)).chunkBytes, 64u * 1024);
  EXPECT_EQ(ncclNvlsPipeline(512 * MiB, 72, ncclNvlsShape(10)).chunkBytes, 32u * 1024);
  EXPECT_EQ(ncclNvlsPipeline(64 * MiB, 72, ncclNvlsShape(10)).chunkBytes, 16u * 1024);
  // The last iteration takes what the whole ones leave; a size under one iteration is both.
  const NvlsPipeline r = ncclNvlsPipeline(GiB, 72, ncclNvlsShape(10));  // 9 x 108 MiB + 52 MiB
  EXPECT_EQ(r.fillBytes, 108 * MiB);
  EXPECT_EQ(r.drainBytes, GiB - 9 * 108 * MiB);
  const NvlsPipeline one = ncclNvlsPipeline(MiB, 8, ncclNvlsShape(9));
  EXPECT_EQ(one.fillBytes, MiB);
  EXPECT_EQ(one.drainBytes, MiB);
  EXPECT_EQ(ncclNvlsPipeline(0, 8, ncclNvlsShape(9)).drainBytes, 0u);
}

TEST(LaunchShapes, RingChunksCoverTheBufferOnce) {
  for (uint64_t count : {0ull, 1ull, 5ull, 250ull, 1000ull, 16384ull}) {
    for (uint64_t n : {2ull, 3ull, 8ull}) {
      uint64_t next = 0;
      for (uint64_t c = 0; c < n; ++c) {
        const Chunk k = ringChunk(count, n, c);
        if (k.count > 0) {
          EXPECT_EQ(k.first, next) << count << " " << n << " " << c;
          EXPECT_EQ(k.first % 4, 0u);
        }
        next = k.first + k.count;
      }
      EXPECT_EQ(next, count) << count << " " << n;
    }
  }
}

uint32_t word(const std::vector<unsigned char>& b, size_t i) {
  uint32_t w = 0;
  std::memcpy(&w, &b[i * 4], 4);
  return w;
}

TEST(Reference, SumsAreExactInEveryType) {
  // 72 GPUs (gb200-nvl72): every sum at most 216, a whole number in each type's encoding.
  for (uint32_t dtype : {MCSIM_DTYPE_F32, MCSIM_DTYPE_F16X2, MCSIM_DTYPE_BF16X2, MCSIM_DTYPE_F64, MCSIM_DTYPE_U32,
                         MCSIM_DTYPE_S32, MCSIM_DTYPE_U64}) {
    const std::vector<unsigned char> sum = expectedBytes(dtype, 4096, 72);
    ASSERT_EQ(sum.size(), 4096 * mcsim_dtype_bytes(dtype));
    EXPECT_EQ(countMismatches(dtype, sum, sum, 0), 0u);
  }
  // Two GPUs of f32: the sum of the inputs, element by element.
  const auto a = inputBytes(MCSIM_DTYPE_F32, 64, 0), b = inputBytes(MCSIM_DTYPE_F32, 64, 1);
  const auto s = expectedBytes(MCSIM_DTYPE_F32, 64, 2);
  for (size_t i = 0; i < 64; ++i) {
    float x, y, z;
    std::memcpy(&x, &a[i * 4], 4);
    std::memcpy(&y, &b[i * 4], 4);
    std::memcpy(&z, &s[i * 4], 4);
    EXPECT_EQ(x + y, z);
    EXPECT_TRUE(x == 0 || x == 1 || x == 2 || x == 3);
  }
  // Halves: 1.0 is 0x3c00 (f16) and 0x3f80 (bf16), low half first; inputs differ by GPU.
  const auto h = expectedBytes(MCSIM_DTYPE_F16X2, 1, 1), bf = expectedBytes(MCSIM_DTYPE_BF16X2, 1, 1);
  for (uint32_t w : {word(h, 0)}) {
    for (uint32_t half : {w & 0xffff, w >> 16}) EXPECT_TRUE(half == 0 || half == 0x3c00 || half == 0x4000 || half == 0x4200);
  }
  for (uint32_t w : {word(bf, 0)}) {
    for (uint32_t half : {w & 0xffff, w >> 16}) EXPECT_TRUE(half == 0 || half == 0x3f80 || half == 0x4000 || half == 0x4040);
  }
  EXPECT_NE(inputBytes(MCSIM_DTYPE_U32, 256, 0), inputBytes(MCSIM_DTYPE_U32, 256, 1));
}

TEST(Reference, ReportsMismatches) {
  auto sum = expectedBytes(MCSIM_DTYPE_U32, 16, 8);
  auto got = sum;
  got[4 * 3] ^= 1;
  got[4 * 9] ^= 1;
  EXPECT_EQ(countMismatches(MCSIM_DTYPE_U32, sum, got, 5), 2u);
}

}  // namespace
}  // namespace mcsim::bench
