// The arguments of a driver call that fault plans can filter on (`cuMemCreate size>=1GiB`), and
// the table of which entry point reports which (fault_arguments.def).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace mcsim::fabric {

// One argument as the driver passes it to the plan. Built only while a plan is installed, so the
// constructors may read through the call's pointers, but never through a null one: a field of a
// struct the caller did not pass is reported as absent, and filters on it do not match.
struct FaultArgument {
  const char* name = "";
  uint64_t value = 0;
  const char* text = nullptr;  // string arguments (cuGetProcAddress's symbol)
  bool isText = false;
  bool present = true;

  // Integers and enums, as the unsigned 64-bit value plans compare against.
  template <typename T, std::enable_if_t<std::is_integral_v<T> || std::is_enum_v<T>, int> = 0>
  FaultArgument(const char* n, T v) : name(n), value(static_cast<uint64_t>(v)) {}
  // A string; absent when null.
  FaultArgument(const char* n, const char* s) : name(n), text(s), isText(true), present(s != nullptr) {}
  // A field of a struct the call takes by pointer: {"size", prop, &CUmulticastObjectProp::size}.
  template <typename S, typename M>
  FaultArgument(const char* n, const S* s, M S::*field)
      : name(n), value(s != nullptr ? static_cast<uint64_t>(s->*field) : 0), present(s != nullptr) {}
};

struct FaultArgumentSpec {
  std::string name;
  bool text = false;  // ":string" in the table
};

// What `entry` (a base name: cuMemCreate) reports, in order; nullptr when it reports nothing.
const std::vector<FaultArgumentSpec>* faultArgumentsOf(const std::string& entry);
// Every entry point of the table, in table order, with what it reports.
const std::vector<std::pair<std::string, std::vector<FaultArgumentSpec>>>& faultArgumentTable();

// Whether the `n` arguments a call of `entry` reported are exactly the table's list (names, order,
// kind); otherwise false with the problem. The driver checks every call it consults the plan for.
bool reportsTableArguments(const std::string& entry, const FaultArgument* args, size_t n, std::string* problem);

}  // namespace mcsim::fabric
