// JSON documents that remember where each value came from, so that a problem found while
// reading a preset (or a plan, or a trace) names the file and the line, not just the key.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace mcsim::fabric {

// A problem in an input file, with the file and line it refers to.
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& file, int line, const std::string& problem);
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string file_;
  int line_;
  std::string problem_;
};

// How deeply a document's arrays and objects may nest (JsonSource::parse refuses deeper ones).
constexpr size_t kMaxJsonDepth = 64;

class JsonSource {
 public:
  // Parses `text`; a syntax error, a number beyond a double and nesting deeper than
  // kMaxJsonDepth each throw InputError naming `fileName` and the line.
  static JsonSource parse(const std::string& text, const std::string& fileName);

  const nlohmann::json& root() const { return root_; }
  const std::string& file() const { return file_; }
  // The line of the value at JSON pointer `pointer` ("/gpu/attributes/X"), or of its nearest
  // ancestor that has one; 1 for the root.
  int lineOf(const std::string& pointer) const;
  [[noreturn]] void fail(const std::string& pointer, const std::string& problem) const;

 private:
  nlohmann::json root_;
  std::string file_;
  std::map<std::string, int> lines_;
};

}  // namespace mcsim::fabric
