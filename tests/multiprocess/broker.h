// What the multi-process tests and the load benchmark share: running programs, and the broker
// that plays NCCL's bootstrap for mp_rank processes (mp_rank.cpp describes its protocol).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/multiprocess/messages.h"

namespace mptest {

using Env = std::vector<std::pair<std::string, std::string>>;

inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// How many entries a directory has (a process's descriptors: /proc/PID/fd).
inline int countEntries(const std::string& dir) {
  int n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// "N in use" of `mcsim node status`: the bytes of the node's segment in use.
inline unsigned long long segmentInUse(const std::string& status) {
  const size_t at = status.find(" in use");
  if (at == std::string::npos) return 0;
  const size_t start = status.rfind(' ', at - 1);
  return std::strtoull(status.c_str() + start + 1, nullptr, 10);
}

// Runs a program to its end with `env` added; its exit status and output (stdout and stderr).
struct Ran {
  int status = -1;
  std::string output;
};
inline Ran runProgram(const std::vector<std::string>& argv, const Env& env) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    dup2(out[1], 1);
    dup2(out[1], 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  Ran r;
  char buf[4096];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof buf)) > 0) r.output.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// The processes of one test and what they tell (mp_rank.cpp's protocol).
class Broker {
 public:
  // `program` is mp_rank; each process's output goes to DIR/rankN.out.
  Broker(std::string program, std::string dir) : program_(std::move(program)), dir_(std::move(dir)) {}
  ~Broker() {
    for (auto& [rank, p] : procs_) {
      if (!p.exited) kill(p.pid, SIGKILL);
    }
    finish();
  }

  // Starts mp_rank SCENARIO RANK RANKS FD for `rank` with `env` added (and MCSIM_RANK).
  void spawn(const std::string& scenario, int rank, int ranks, const Env& env) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return;
    const std::string err = dir_ + "/rank" + std::to_string(rank) + ".out";
    const pid_t pid = fork();
    if (pid == 0) {
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      setenv("MCSIM_RANK", std::to_string(rank).c_str(), 1);
      const int fd = dup(sv[1]);  // without close-on-exec
      const int log = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(log, 1);
      dup2(log, 2);
      const std::string fdText = std::to_string(fd), rankText = std::to_string(rank), ranksText = std::to_string(ranks);
      execl(program_.c_str(), program_.c_str(), scenario.c_str(), rankText.c_str(), ranksText.c_str(), fdText.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    close(sv[1]);
    std::lock_guard<std::mutex> lock(mu_);
    Proc& p = procs_[rank];
    p.pid = pid;
    p.sock = sv[0];
    p.output = err;
  }

  // Serves the processes until every one has closed its socket.
  void start() { thread_ = std::thread([this] { serve(); }); }
  void finish() {
    if (thread_.joinable()) thread_.join();
    for (auto& [rank, p] : procs_) {
      if (p.sock >= 0) close(p.sock);
      p.sock = -1;
    }
    if (shared_ >= 0) close(shared_);
    shared_ = -1;
  }

  // Waits for `rank` to exit; its status (128 + signal when killed).
  int wait(int rank) {
    int st = 0;
    waitpid(procs_.at(rank).pid, &st, 0);
    procs_.at(rank).exited = true;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  void kill9(int rank) { kill(procs_.at(rank).pid, SIGKILL); }
  pid_t pid(int rank) { return procs_.at(rank).pid; }
  std::string output(int rank) { return readFile(procs_.at(rank).output); }

  // The value `rank` noted for `key`, waiting up to `seconds` for it; "" if none came.
  std::string noted(int rank, const std::string& key, double seconds = 60) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return notes_.count({rank, key}) != 0; });
    auto it = notes_.find({rank, key});
    return it == notes_.end() ? std::string() : it->second;
  }
  void release(const std::string& hold) {
    std::lock_guard<std::mutex> lock(mu_);
    released_.insert(hold);
    answerHolds();
  }

 private:
  struct Proc {
    pid_t pid = -1;
    int sock = -1;
    std::string output;
    bool exited = false;
    bool open = true;
  };

  void reply(int sock, const std::string& text, int fd = -1) { sendText(sock, text, fd); }

  // Under mu_: answers whatever waits and can now be answered.
  void answerHolds() {
    for (auto it = holds_.begin(); it != holds_.end();) {
      if (released_.count(it->second) != 0) {
        reply(procs_.at(it->first).sock, "go");
        it = holds_.erase(it);
      } else {
        ++it;
      }
    }
  }
  void answerWaiters() {
    // A fetch of the Nth descriptor waits until N were shared.
    for (auto it = fetchers_.begin(); it != fetchers_.end();) {
      if (it->second <= sharedCount_) {
        reply(procs_.at(it->first).sock, "fd", shared_);
        it = fetchers_.erase(it);
      } else {
        ++it;
      }
    }
    if (!getters_.empty() && !text_.empty()) {
      for (int r : getters_) reply(procs_.at(r).sock, text_);
      getters_.clear();
    }
    size_t open = 0;
    for (const auto& [rank, p] : procs_) open += p.open ? 1 : 0;
    if (!barrier_.empty() && barrier_.size() >= open) {
      for (int r : barrier_) reply(procs_.at(r).sock, "go");
      barrier_.clear();
    }
    answerHolds();
  }

  void serve() {
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<int> ranks;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (const auto& [rank, p] : procs_) {
          if (!p.open) continue;
          fds.push_back({p.sock, POLLIN, 0});
          ranks.push_back(rank);
        }
      }
      if (fds.empty()) return;
      if (poll(fds.data(), fds.size(), 100) <= 0) continue;
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        std::string msg;
        int passed = -1;
        const bool got = receiveText(fds[i].fd, &msg, &passed);
        std::lock_guard<std::mutex> lock(mu_);
        const int rank = ranks[i];
        if (!got) {
          procs_.at(rank).open = false;  // it exited (or was killed): barriers no longer count it
          answerWaiters();
          cv_.notify_all();
          continue;
        }
        if (passed >= 0 && msg != "share") close(passed);
        if (msg == "barrier") {
          barrier_.push_back(rank);
        } else if (msg == "share") {
          // The broker keeps the latest descriptor only (a new one replaces and closes it), as a
          // bootstrap that forwards one handle per setup does.
          if (shared_ >= 0) close(shared_);
          shared_ = passed;
          ++sharedCount_;
          reply(fds[i].fd, "ok");
        } else if (msg.rfind("fetch", 0) == 0) {
          fetchers_.emplace_back(rank, msg.size() > 6 ? std::stoull(msg.substr(6)) : 1);
        } else if (msg.rfind("put ", 0) == 0) {
          text_ = msg.substr(4);
          reply(fds[i].fd, "ok");
        } else if (msg == "get") {
          getters_.push_back(rank);
        } else if (msg.rfind("hold ", 0) == 0) {
          holds_.emplace(rank, msg.substr(5));
        } else if (msg.rfind("note ", 0) == 0) {
          const std::string rest = msg.substr(5);
          const size_t sp = rest.find(' ');
          notes_[{rank, rest.substr(0, sp)}] = sp == std::string::npos ? "" : rest.substr(sp + 1);
          cv_.notify_all();
        }
        answerWaiters();
      }
    }
  }

  std::string program_, dir_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, Proc> procs_;
  std::vector<int> barrier_, getters_;
  std::vector<std::pair<int, uint64_t>> fetchers_;  // rank, which share it waits for (1 = the first)
  int shared_ = -1;
  uint64_t sharedCount_ = 0;
  std::string text_;
  std::multimap<int, std::string> holds_;
  std::set<std::string> released_;
  std::map<std::pair<int, std::string>, std::string> notes_;
};

}  // namespace mptest
