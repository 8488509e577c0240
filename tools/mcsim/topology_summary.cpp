#include "topology_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "settings/byte_size.h"

namespace mcsim::tools {

namespace {

using fabric::Preset;

// A device attribute from the GPU description, or -1 when the description leaves it out.
int64_t attribute(const Preset& p, const char* name) {
  for (const auto& [key, value] : p.gpu.attributes) {
    if (key == name) return value;
  }
  return -1;
}

// "0-3", "0, 2, 5": consecutive runs collapsed.
std::string ranges(const std::vector<int>& sorted) {
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", sorted[i]) : fmt::format("{}-{}", sorted[i], sorted[j]);
    i = j + 1;
  }
  return out;
}

// "5, 4, 4, 5", or "1 each" when every switch gets the same.
std::string linksPerSwitch(const std::vector<int>& links) {
  if (!links.empty() && std::all_of(links.begin(), links.end(), [&](int n) { return n == links[0]; })) {
    return fmt::format("{} to each", links[0]);
  }
  return fmt::format("{}", fmt::join(links, ", "));
}

void gpus(const Preset& p, std::string& out) {
  const int64_t sms = attribute(p, "MULTIPROCESSOR_COUNT");
  const int64_t major = attribute(p, "COMPUTE_CAPABILITY_MAJOR");
  const int64_t minor = attribute(p, "COMPUTE_CAPABILITY_MINOR");
  out += fmt::format("GPUs          {} x {} ({})\n", p.gpuCount, p.gpu.name, p.gpu.model);
  out += fmt::format("  memory      {} each ({} bytes), {} in all\n", settings::formatByteSize(p.gpu.memoryBytes),
                     p.gpu.memoryBytes, settings::formatByteSize(p.gpu.memoryBytes * static_cast<uint64_t>(p.gpuCount)));
  if (sms >= 0 && major >= 0 && minor >= 0) {
    out += fmt::format("  compute     {} SMs, compute capability {}.{}\n", sms, major, minor);
  }
  out += fmt::format("  VMM pages   {} minimum, {} recommended\n", settings::formatByteSize(p.gpu.vmmGranularityMinimum),
                     settings::formatByteSize(p.gpu.vmmGranularityRecommended));
}

void nvlink(const Preset& p, std::string& out) {
  if (p.nvlink.linksPerGpu == 0) {
    out += "NVLink        none (no peer access)\n";
    return;
  }
  const double perGpu = p.nvlink.linksPerGpu * p.nvlink.gbytesPerSecPerLinkPerDirection;
  out += fmt::format("NVLink        {} links per GPU x {:g} GB/s = {:g} GB/s per GPU per direction\n",
                     p.nvlink.linksPerGpu, p.nvlink.gbytesPerSecPerLinkPerDirection, perGpu);
}

void switches(const Preset& p, std::string& out) {
  const auto& s = p.nvswitch;
  if (s.count == 0) {
    out += "NVSwitch      none\n";
    return;
  }
  const int busiest = *std::max_element(s.linksPerGpuPerSwitch.begin(), s.linksPerGpuPerSwitch.end());
  out += fmt::format("NVSwitch      {} switches, {} ports each\n", s.count, s.ports);
  out += fmt::format("  links       per GPU: {}; busiest switch uses {} of its {} ports for GPUs\n",
                     linksPerSwitch(s.linksPerGpuPerSwitch), busiest * p.gpuCount, s.ports);
}

void multicast(const Preset& p, std::string& out) {
  if (!p.multicastSupported()) {
    out += "Multicast     not supported (MULTICAST_SUPPORTED = 0)\n";
    return;
  }
  const auto& m = p.multicast;
  out += fmt::format("Multicast     supported: teams of up to {} GPUs, {} slots per switch\n", m.maxTeamSize,
                     p.nvswitch.multicastSlots);
  out += fmt::format("  granularity {} minimum, {} recommended\n", settings::formatByteSize(m.granularityMinimum),
                     settings::formatByteSize(m.granularityRecommended));
}

void host(const Preset& p, std::string& out) {
  out += fmt::format("Host NUMA     {} node{}, {} each\n", p.hostNumaNodes, p.hostNumaNodes == 1 ? "" : "s",
                     settings::formatByteSize(p.hostMemoryBytesPerNumaNode));
  // A few nodes per line keeps a rack's 36 nodes readable.
  constexpr int kPerLine = 4;
  std::string line;
  for (int node = 0; node < p.hostNumaNodes; ++node) {
    std::vector<int> near;
    for (int g = 0; g < p.gpuCount; ++g) {
      if (p.gpuNumaNode[static_cast<size_t>(g)] == node) near.push_back(g);
    }
    const std::string entry =
        fmt::format("node {}: {}", node, near.empty() ? std::string("no GPUs") : "GPUs " + ranges(near));
    line += (line.empty() ? "" : "; ") + entry;
    if ((node + 1) % kPerLine == 0 || node + 1 == p.hostNumaNodes) {
      out += "  " + line + "\n";
      line.clear();
    }
  }
  std::vector<std::string> buses;
  for (int g = 0; g < p.gpuCount; ++g) {
    const int bus = p.pciBusId.empty() ? 0x10 + g : p.pciBusId[static_cast<size_t>(g)];
    buses.push_back(fmt::format("{:02x}", bus));
  }
  out += fmt::format("  PCI buses   {}{}\n", fmt::join(buses, " "), p.pciBusId.empty() ? " (default)" : "");
}

}  // namespace

std::string summarizeTopology(const Preset& p) {
  std::string out = fmt::format("{}: {}\n", p.name, p.description);
  out += fmt::format("  file        {}\n", p.file);
  gpus(p, out);
  nvlink(p, out);
  switches(p, out);
  multicast(p, out);
  host(p, out);
  out += p.imexChannel ? "IMEX          channel present: FABRIC handles can be exported and imported\n"
                       : "IMEX          no channel: cuMemCreate with FABRIC handles returns NOT_PERMITTED\n";
  return out;
}

}  // namespace mcsim::tools
