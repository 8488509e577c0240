// The driver's tables against the cuda.h in use. device_attributes.def and results.def must list
// exactly the CUdevice_attribute and CUresult names that cuda.h defines (a new toolkit adds
// names; the driver must answer for every one), and entry_points.def may only name PFN types
// and functions that the headers really have. The headers are read as text at run time, so a
// newer toolkit shows up here as a failing test.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef MCSIM_TEST_CUDA_INCLUDE_DIR
#error "MCSIM_TEST_CUDA_INCLUDE_DIR must name the directory of the cuda.h in use"
#endif
#ifndef MCSIM_TEST_SOURCE_DIR
#error "MCSIM_TEST_SOURCE_DIR must name the project's source directory"
#endif

namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string cudaHeader(const char* name) { return readText(std::string(MCSIM_TEST_CUDA_INCLUDE_DIR) + "/" + name); }
std::string driverFile(const char* name) { return readText(std::string(MCSIM_TEST_SOURCE_DIR) + "/driver/" + name); }

// C source without its comments (and, unless `keepPreprocessor`, its preprocessor lines), so
// that names mentioned in documentation comments are not taken for declarations.
std::string stripComments(const std::string& src, bool keepPreprocessor = false) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size();) {
    if (src.compare(i, 2, "/*") == 0) {
      const size_t end = src.find("*/", i + 2);
      i = end == std::string::npos ? src.size() : end + 2;
      out += ' ';
    } else if (src.compare(i, 2, "//") == 0) {
      i = src.find('\n', i);
      if (i == std::string::npos) i = src.size();
    } else {
      out += src[i++];
    }
  }
  std::istringstream lines(out);
  std::string line, kept;
  while (std::getline(lines, line)) {
    const auto first = line.find_first_not_of(" \t");
    if (!keepPreprocessor && first != std::string::npos && line[first] == '#') continue;
    kept += line + '\n';
  }
  return kept;
}

// The enumerator names of `typedef enum <tag> { ... } <name>;`, in header order.
std::vector<std::string> enumerators(const std::string& header, const std::string& tag) {
  const std::string code = stripComments(header);
  const size_t open = code.find("typedef enum " + tag);
  EXPECT_NE(open, std::string::npos) << "enum " << tag << " not found";
  if (open == std::string::npos) return {};
  const size_t lbrace = code.find('{', open);
  const size_t rbrace = code.find('}', lbrace);
  const std::string body = code.substr(lbrace + 1, rbrace - lbrace - 1);
  std::vector<std::string> names;
  std::istringstream parts(body);
  std::string part;
  while (std::getline(parts, part, ',')) {
    std::smatch m;
    if (std::regex_search(part, m, std::regex("[A-Za-z_][A-Za-z0-9_]*"))) names.push_back(m.str());
  }
  return names;
}

// The first argument of every `macro(...)` line of a .def file, in file order.
std::vector<std::string> defNames(const std::string& def, const std::string& macro) {
  std::vector<std::string> names;
  const std::regex line("^" + macro + "\\(\\s*([A-Za-z0-9_]+)");
  std::istringstream in(def);
  std::string l;
  while (std::getline(in, l)) {
    std::smatch m;
    if (std::regex_search(l, m, line)) names.push_back(m[1].str());
  }
  return names;
}

std::vector<std::string> withPrefix(const std::string& prefix, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(prefix + n);
  return out;
}

// Names in `a` that are not in `b`, for readable failure messages.
std::string missingFrom(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const std::set<std::string> inB(b.begin(), b.end());
  std::string out;
  for (const auto& n : a) {
    if (inB.count(n) == 0) out += " " + n;
  }
  return out.empty() ? "(none)" : out;
}

std::string duplicates(const std::vector<std::string>& names) {
  std::set<std::string> seen;
  std::string out;
  for (const auto& n : names) {
    if (!seen.insert(n).second) out += " " + n;
  }
  return out;
}

std::vector<std::string> headerAttributes() {
  std::vector<std::string> names = enumerators(cudaHeader("cuda.h"), "CUdevice_attribute_enum");
  // CU_DEVICE_ATTRIBUTE_MAX is the enum's end marker, not an attribute.
  names.erase(std::remove(names.begin(), names.end(), "CU_DEVICE_ATTRIBUTE_MAX"), names.end());
  return names;
}

TEST(DeviceAttributesDef, ListsExactlyTheAttributesOfCudaH) {
  const std::vector<std::string> header = headerAttributes();
  const std::vector<std::string> def =
      withPrefix("CU_DEVICE_ATTRIBUTE_", defNames(driverFile("device_attributes.def"), "MCSIM_DEVICE_ATTRIBUTE"));
  ASSERT_GT(header.size(), 100u) << "cuda.h parse found too few attributes";
  EXPECT_EQ(missingFrom(header, def), "(none)") << "in cuda.h but not in device_attributes.def";
  EXPECT_EQ(missingFrom(def, header), "(none)") << "in device_attributes.def but not in cuda.h";
  EXPECT_EQ(duplicates(def), "");
  EXPECT_EQ(def.size(), header.size());
}

TEST(DeviceAttributesDef, IsInHeaderOrder) {
  // The .def promises header order: the first name of an aliased value is the canonical one.
  const std::vector<std::string> def =
      withPrefix("CU_DEVICE_ATTRIBUTE_", defNames(driverFile("device_attributes.def"), "MCSIM_DEVICE_ATTRIBUTE"));
  EXPECT_EQ(def, headerAttributes());
}

TEST(ResultsDef, ListsExactlyTheResultsOfCudaH) {
  const std::vector<std::string> header = enumerators(cudaHeader("cuda.h"), "cudaError_enum");
  const std::vector<std::string> def = defNames(driverFile("results.def"), "MCSIM_RESULT");
  ASSERT_GT(header.size(), 50u) << "cuda.h parse found too few results";
  EXPECT_EQ(missingFrom(header, def), "(none)") << "in cuda.h but not in results.def";
  EXPECT_EQ(missingFrom(def, header), "(none)") << "in results.def but not in cuda.h";
  EXPECT_EQ(duplicates(def), "");
  EXPECT_EQ(def, header) << "results.def is not in header order";
}

struct Entry {
  std::string base, version, symbol, pfn;
};

std::vector<Entry> entryPoints() {
  std::vector<Entry> out;
  const std::regex line(
      "^MCSIM_ENTRY\\(\\s*(\\w+)\\s*,\\s*(\\d+)\\s*,\\s*(\\w+)\\s*,\\s*(\\w+)\\s*\\)\\s*$");
  std::istringstream in(driverFile("entry_points.def"));
  std::string l;
  while (std::getline(in, l)) {
    if (l.rfind("MCSIM_ENTRY", 0) != 0) continue;
    std::smatch m;
    EXPECT_TRUE(std::regex_match(l, m, line)) << "malformed line: " << l;
    if (m.empty()) continue;
    out.push_back(Entry{m[1].str(), m[2].str(), m[3].str(), m[4].str()});
  }
  return out;
}

// Every identifier in `code`.
std::set<std::string> identifiers(const std::string& code) {
  std::set<std::string> out;
  const std::regex ident("[A-Za-z_][A-Za-z0-9_]*");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), ident); it != std::sregex_iterator(); ++it) {
    out.insert(it->str());
  }
  return out;
}

// The PFN type names that cudaTypedefs.h declares: `typedef R (CUDAAPI *PFN_x_vN)(...)`.
// PFN types of cudaTypedefs.h and cudaProfilerTypedefs.h (the profiler calls), and of
// include/mcsim/cuda_multicast_v2.h, which types the entry points the reference documents before
// the toolkit's headers declare them.
std::set<std::string> typedefPfns() {
  const std::string code = stripComments(cudaHeader("cudaTypedefs.h")) +
                           stripComments(cudaHeader("cudaProfilerTypedefs.h")) +
                           stripComments(readText(std::string(MCSIM_TEST_SOURCE_DIR) + "/include/mcsim/cuda_multicast_v2.h"));
  std::set<std::string> out;
  const std::regex decl("\\*\\s*(PFN_\\w+)\\s*\\)");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), decl); it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1].str());
  }
  return out;
}

TEST(EntryPointsDef, EveryPfnTypeIsDeclaredInTheHeaders) {
  const std::vector<Entry> entries = entryPoints();
  ASSERT_GT(entries.size(), 50u);
  const std::set<std::string> pfns = typedefPfns();
  ASSERT_GT(pfns.size(), 100u) << "cudaTypedefs.h parse found too few PFN types";
  for (const Entry& e : entries) EXPECT_EQ(pfns.count(e.pfn), 1u) << e.pfn << " not in the typedef headers";
}

TEST(EntryPointsDef, EveryBaseNameIsInCudaH) {
  // Base names are what cuGetProcAddress is asked for: cuda.h (or, for the profiler calls,
  // cudaProfiler.h) declares them, directly or as the macro that maps them to a _v2 symbol.
  // Macros such as `#define cuMemAlloc cuMemAlloc_v2` are preprocessor lines, so keep those.
  const std::set<std::string> names =
      identifiers(stripComments(cudaHeader("cuda.h"), true) + stripComments(cudaHeader("cudaProfiler.h"), true));
  const std::vector<Entry> entries = entryPoints();
  ASSERT_GT(entries.size(), 50u);
  for (const Entry& e : entries) EXPECT_EQ(names.count(e.base), 1u) << e.base << " not in cuda.h nor cudaProfiler.h";
}

TEST(EntryPointsDef, PfnTypeBelongsToTheBaseName) {
  // cudaTypedefs.h names each variant PFN_<base>_v<version>[_ptds|_ptsz]. A line may borrow the
  // type of a later variant with the same signature (for variants older than the public
  // typedefs), but never the type of another function or of an earlier variant.
  const std::regex pfn("PFN_(\\w+?)_v(\\d+)(_ptds|_ptsz)?");
  for (const Entry& e : entryPoints()) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(e.pfn, m, pfn)) << e.pfn;
    EXPECT_EQ(m[1].str(), e.base) << e.pfn;
    EXPECT_LE(std::stoi(e.version), std::stoi(m[2].str())) << e.base << " " << e.version << " " << e.pfn;
  }
}

TEST(EntryPointsDef, NoVariantIsListedTwice) {
  // cuGetProcAddress picks a variant by (name, version, per-thread stream or not): two lines with
  // the same key would make the choice depend on file order; two lines exporting the same
  // symbol would be two variants that are the same function.
  std::vector<std::string> keys, symbols;
  for (const Entry& e : entryPoints()) {
    const bool perThread = e.pfn.size() > 5 && (e.pfn.compare(e.pfn.size() - 5, 5, "_ptds") == 0 ||
                                                e.pfn.compare(e.pfn.size() - 5, 5, "_ptsz") == 0);
    keys.push_back(e.base + "@" + e.version + (perThread ? "/pt" : ""));
    symbols.push_back(e.symbol);
  }
  EXPECT_EQ(duplicates(keys), "");
  EXPECT_EQ(duplicates(symbols), "");
}

}  // namespace
