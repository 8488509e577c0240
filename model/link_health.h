// Which NVLinks and NVSwitch chips of a node are up: what fault plans did to the fabric, as the
// functional layer (which accesses may cross it) and the timing model (which paths traffic takes,
// at what bandwidth) both read it.
//
// A GPU's links are numbered from 0 switch by switch, as NVML numbers them: with 5/4/4/5 links to
// switches 0..3, links 0-4 lead to switch 0, 5-8 to switch 1, 9-12 to switch 2, 13-17 to switch 3.
// Traffic between two GPUs crosses one switch (the NVSwitch fabric is one hop), so GPUs a and b
// reach each other while some switch that is up has a live link from each; a GPU with no live link
// to a switch that is up is cut off. A node with NVLink but no switches (two GPUs wired directly)
// is described as one switch of all the links.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace mcsim::model {

class LinkHealth {
 public:
  LinkHealth() = default;
  // Every link and switch up. `linksPerSwitch`: each GPU's links to each switch (every GPU is
  // wired alike); at most 64 links a GPU.
  LinkHealth(int gpus, std::vector<int> linksPerSwitch)
      : linksPerSwitch_(std::move(linksPerSwitch)),
        downLinks_(static_cast<size_t>(gpus > 0 ? gpus : 0), 0),
        switchDown_(linksPerSwitch_.size(), false) {
    for (int n : linksPerSwitch_) {
      firstLink_.push_back(links_);
      links_ += n;
    }
  }

  int gpus() const { return static_cast<int>(downLinks_.size()); }
  int switches() const { return static_cast<int>(linksPerSwitch_.size()); }
  int linksPerGpu() const { return links_; }
  // Nothing is down: traffic takes the paths of a healthy fabric.
  bool healthy() const { return down_ == 0; }

  // The switch link `link` of `gpu` leads to (-1: no such link).
  int switchOf(int link) const {
    for (int s = 0; s < switches(); ++s) {
      if (link >= firstLink_[static_cast<size_t>(s)] && link < firstLink_[static_cast<size_t>(s)] + linksPerSwitch_[static_cast<size_t>(s)]) return s;
    }
    return -1;
  }
  // Link `link` of `gpu` down or up (out-of-range arguments change nothing).
  void setLink(int gpu, int link, bool up) {
    if (gpu < 0 || gpu >= gpus() || link < 0 || link >= links_) return;
    uint64_t& m = downLinks_[static_cast<size_t>(gpu)];
    const uint64_t bit = uint64_t{1} << link;
    if (up == ((m & bit) == 0)) return;
    m ^= bit;
    down_ += up ? -1 : 1;
  }
  void setSwitch(int sw, bool up) {
    if (sw < 0 || sw >= switches() || switchDown_[static_cast<size_t>(sw)] == !up) return;
    switchDown_[static_cast<size_t>(sw)] = !up;
    down_ += up ? -1 : 1;
  }
  bool switchUp(int sw) const { return sw >= 0 && sw < switches() && !switchDown_[static_cast<size_t>(sw)]; }
  // Whether `link` of `gpu` carries traffic: the link is up and so is the switch it leads to.
  bool linkActive(int gpu, int link) const {
    if (gpu < 0 || gpu >= gpus() || link < 0 || link >= links_) return false;
    return (downLinks_[static_cast<size_t>(gpu)] >> link & 1) == 0 && switchUp(switchOf(link));
  }
  // `gpu`'s links to switch `sw` that carry traffic (0 when the switch is down).
  int liveLinks(int gpu, int sw) const {
    if (gpu < 0 || gpu >= gpus() || !switchUp(sw)) return 0;
    const int first = firstLink_[static_cast<size_t>(sw)], n = linksPerSwitch_[static_cast<size_t>(sw)];
    const uint64_t range = (n >= 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1)) << first;
    return n - __builtin_popcountll(downLinks_[static_cast<size_t>(gpu)] & range);
  }
  // All of `gpu`'s links that carry traffic.
  int liveLinks(int gpu) const {
    int n = 0;
    for (int s = 0; s < switches(); ++s) n += liveLinks(gpu, s);
    return n;
  }
  // Whether `gpu` can reach the fabric at all.
  bool attached(int gpu) const { return switches() == 0 || liveLinks(gpu) > 0; }
  // Whether GPUs a and b reach each other over NVLink (a GPU always reaches itself; without a
  // switch fabric every pair does).
  bool reach(int a, int b) const {
    if (a == b || switches() == 0) return true;
    for (int s = 0; s < switches(); ++s) {
      if (liveLinks(a, s) > 0 && liveLinks(b, s) > 0) return true;
    }
    return false;
  }

 private:
  std::vector<int> linksPerSwitch_;
  std::vector<int> firstLink_;
  int links_ = 0;
  std::vector<uint64_t> downLinks_;  // per GPU, a bit per link that is down
  std::vector<bool> switchDown_;
  int down_ = 0;                     // links and switches down
};

}  // namespace mcsim::model
