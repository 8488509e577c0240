#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace mcsim::tools {

ChildResult runChild(const std::vector<std::string>& argv, const std::vector<std::string>& env, double timeoutSeconds) {
  using Clock = std::chrono::steady_clock;
  ChildResult res;
  const auto started = Clock::now();
  int pipefd[2];
  // Close-on-exec, so that children started at the same moment by other threads do not inherit
  // this pipe (and keep it open past this child's exit).
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    res.output = std::string("cannot create a pipe: ") + std::strerror(errno);
    return res;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);

  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  // A name without a directory is looked up on PATH, as a shell (and `mcsim run`) would.
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    res.output = "cannot start '" + argv[0] + "': " + std::strerror(rc);
    return res;
  }
  res.started = true;

  const auto deadline = started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeoutSeconds));
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 && !res.timedOut) {
      res.timedOut = true;
      ::kill(-pid, SIGKILL);
    }
    pollfd p{pipefd[0], POLLIN, 0};
    const int n = ::poll(&p, 1, res.timedOut ? 1000 : static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      if (res.timedOut) break;  // killed, and still no end of file: a grandchild holds the pipe
      continue;
    }
    const ssize_t got = ::read(pipefd[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    res.output.append(buf, static_cast<size_t>(got));
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) res.exitStatus = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) res.signal = WTERMSIG(status);
  res.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return res;
}

}  // namespace mcsim::tools
