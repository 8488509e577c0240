// What a process forked from the test answers: `query` runs in the child (forked before the
// test's own cuInit, so that it builds a node of its own, with the settings `query` sets first)
// and the bytes it returns come back. The child must exit 0.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace cutest {

template <typename Query>
std::string forkedAnswer(Query query) {
  int p[2];
  EXPECT_EQ(pipe(p), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(p[0]);
    const std::string out = query();
    _exit(write(p[1], out.data(), out.size()) == static_cast<ssize_t>(out.size()) ? 0 : 1);
  }
  close(p[1]);
  std::string out;
  char buf[256];
  ssize_t n = 0;
  while ((n = read(p[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(p[0]);
  int st = 0;
  waitpid(child, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  return out;
}

}  // namespace cutest
