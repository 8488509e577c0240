// files::readBoundedFile, which every reader of a user's or a program's file goes through
// (presets, fault plans, traces, module images): a regular file of bounded size is read whole;
// anything else is refused with a reason, without blocking and without reading on for ever
// (issue 19, item 12: a directory aborted cuModuleLoad, /dev/zero was read without end).
#include "files/bounded_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace mcsim::files {
namespace {

class BoundedFile : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mcsim-bounded-file-XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(tmpl));
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const std::string& f : made_) std::remove(f.c_str());
    rmdir(dir_.c_str());
  }
  std::string path(const std::string& name) {
    made_.push_back(dir_ + "/" + name);
    return made_.back();
  }
  std::string file(const std::string& name, const std::string& bytes) {
    const std::string p = path(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::string dir_;
  std::vector<std::string> made_;
};

TEST_F(BoundedFile, ARegularFileIsReadWhole) {
  const std::string bytes("one\0two\nthree", 13);
  const FileRead r = readBoundedFile(file("f", bytes), 100);
  ASSERT_TRUE(r.ok()) << r.why;
  EXPECT_EQ(r.bytes, bytes);
  EXPECT_EQ(readBoundedFile(file("empty", ""), 100).bytes, "");
}

TEST_F(BoundedFile, AFileOfExactlyTheBoundIsReadAndOneByteMoreIsRefused) {
  EXPECT_TRUE(readBoundedFile(file("ten", "0123456789"), 10).ok());
  const FileRead r = readBoundedFile(file("eleven", "0123456789A"), 10);
  EXPECT_EQ(r.problem, ReadProblem::kTooLarge);
  EXPECT_NE(r.why.find("larger than 10 bytes"), std::string::npos) << r.why;
  EXPECT_TRUE(r.bytes.empty());
}

TEST_F(BoundedFile, AMissingFileIsMissing) {
  const FileRead r = readBoundedFile(dir_ + "/absent", 100);
  EXPECT_EQ(r.problem, ReadProblem::kMissing);
  EXPECT_NE(r.why.find(dir_ + "/absent"), std::string::npos) << r.why;
}

TEST_F(BoundedFile, ADirectoryIsADirectory) {
  const FileRead r = readBoundedFile(dir_, 100);
  EXPECT_EQ(r.problem, ReadProblem::kDirectory);
  EXPECT_EQ(r.why, dir_ + " is a directory");
}

TEST_F(BoundedFile, ADeviceIsRefusedUnread) {
  const FileRead r = readBoundedFile("/dev/zero", uint64_t{1} << 40);
  EXPECT_EQ(r.problem, ReadProblem::kNotRegular);
  EXPECT_EQ(r.why, "/dev/zero is not a regular file");
}

TEST_F(BoundedFile, AFifoWithoutAWriterIsRefusedWithoutWaiting) {
  const std::string p = path("fifo");
  ASSERT_EQ(0, mkfifo(p.c_str(), 0600));
  const FileRead r = readBoundedFile(p, 100);  // would block for ever in a plain open()
  EXPECT_EQ(r.problem, ReadProblem::kNotRegular);
}

}  // namespace
}  // namespace mcsim::files
