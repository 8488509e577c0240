#include "fabric/node_server_status.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "fabric/node_host.h"
#include "fabric/node_server_processes.h"
#include "fabric/node_server_staging.h"
#include "fabric/node_server_transport.h"

namespace mcsim::fabric::server {

void ServerLog::line(const std::string& text) const {
  std::fprintf(stderr, "mcsim node %s [%.3f s]: %s\n", name_.c_str(), uptimeSeconds(), text.c_str());
  std::fflush(stderr);
}

double ServerLog::uptimeSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

std::string StatusReport::text() {
  const NodeStats s = host_.stats();
  const Preset& p = host_.preset();
  char buf[512];
  std::string out;
  std::snprintf(buf, sizeof buf, "node '%s': running, pid %d, up %.1f s\n", options_.name.c_str(),
                static_cast<int>(getpid()), log_.uptimeSeconds());
  out += buf;
  std::snprintf(buf, sizeof buf, "  preset:    %s (%d GPUs)\n", p.name.c_str(), p.gpuCount);
  out += buf;
  const uint64_t used = staging_.used(), size = staging_.size();
  std::snprintf(buf, sizeof buf, "  segment:   /dev/shm/%s, %llu bytes, %llu in use\n", paths_.segment.c_str(),
                static_cast<unsigned long long>(size), static_cast<unsigned long long>(used));
  out += buf;
  if (!options_.follow.empty()) out += "  replay:    " + replayState() + "\n";
  out += "  socket:    " + paths_.socket + "\n";
  out += "  log:       " + paths_.log + "\n";
  std::snprintf(buf, sizeof buf, "  simulated: %llu ps\n",
                static_cast<unsigned long long>(host_.simulatedPs()));
  out += buf;
  std::snprintf(buf, sizeof buf,
                "  node:      %llu allocations, %llu handles, %llu reservations, %llu mappings, %llu multicast "
                "objects, %llu exported descriptors, %llu resident bytes\n",
                static_cast<unsigned long long>(s.allocations), static_cast<unsigned long long>(s.handles),
                static_cast<unsigned long long>(s.reservations), static_cast<unsigned long long>(s.mappings),
                static_cast<unsigned long long>(s.multicastObjects), static_cast<unsigned long long>(s.exportedFds),
                static_cast<unsigned long long>(s.residentBytes));
  out += buf;
  const std::vector<std::shared_ptr<AttachedProcess>> attached = processes_.list();
  out += "  processes: " + std::to_string(attached.size()) + " attached\n";
  for (const auto& c : attached) {
    out += "    #" + std::to_string(c->number) + " pid " + c->who() + ", " + std::to_string(channels_.count(*c)) +
           " channel(s), " + std::to_string(staging_.blockCount(c->number)) + " data block(s)\n";
  }
  return out;
}

std::string StatusReport::replayState() {
  const std::string d = host_.admissionDivergence();
  return d.empty() ? "following the recorded admission order (" + std::to_string(options_.follow.size()) + " admissions)"
                   : "gave the recorded admission order up: " + d;
}

}  // namespace mcsim::fabric::server
