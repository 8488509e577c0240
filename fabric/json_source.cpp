#include "fabric/json_source.h"

#include <iterator>
#include <vector>

namespace mcsim::fabric {

InputError::InputError(const std::string& file, int line, const std::string& problem)
    // "file:line: problem" as compilers write it; without a line (the file as a whole, or a name
    // that is no file) no ":0", and without either just the problem.
    : std::runtime_error(file.empty() ? problem
                         : line > 0   ? file + ":" + std::to_string(line) + ": " + problem
                                      : file + ": " + problem),
      file_(file),
      line_(line),
      problem_(problem) {}

namespace {

// An input iterator over the text that publishes how far the parser has read, so that the
// SAX handler can tell the line of each token as it arrives.
struct TrackingIterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  const char* p;
  const char** furthest;
  reference operator*() const { return *p; }
  TrackingIterator& operator++() {
    ++p;
    if (p > *furthest) *furthest = p;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const TrackingIterator& o) const { return p == o.p; }
  bool operator!=(const TrackingIterator& o) const { return p != o.p; }
};

using Json = nlohmann::json;

// Builds the DOM through nlohmann's own DOM builder and records the line of every value,
// keyed by its JSON pointer.
class LineRecorder {
 public:
  LineRecorder(Json& root, const char* begin, const char** furthest,
               std::map<std::string, int>& lines)
      : dom_(root, true), begin_(begin), furthest_(furthest), lines_(lines) {}

  bool null() { return value() && dom_.null(); }
  bool boolean(bool v) { return value() && dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return value() && dom_.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return value() && dom_.number_unsigned(v); }
  bool number_float(Json::number_float_t v, const std::string& s) {
    return value() && dom_.number_float(v, s);
  }
  bool string(std::string& v) { return value() && dom_.string(v); }
  bool binary(Json::binary_t& v) { return value() && dom_.binary(v); }
  bool start_object(std::size_t n) {
    value();
    if (!deeper()) return false;
    stack_.push_back(Frame{false, 0, ""});
    return dom_.start_object(n);
  }
  bool key(std::string& k) {
    stack_.back().key = k;
    lines_[pointer()] = currentLine();
    return dom_.key(k);
  }
  bool end_object() {
    stack_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    value();
    if (!deeper()) return false;
    stack_.push_back(Frame{true, 0, ""});
    return dom_.start_array(n);
  }
  bool end_array() {
    stack_.pop_back();
    return dom_.end_array();
  }
  // Every error the parser finds (a syntax error, a number that overflows a double: nlohmann's
  // parse_error and out_of_range alike) stops the parse and is kept, for JsonSource::parse to
  // throw as an InputError naming the line. Nothing nlohmann throws escapes.
  template <typename Exception>
  bool parse_error(std::size_t pos, const std::string&, const Exception& ex) {
    const std::string what = ex.what();
    const auto syntax = what.find("syntax error");
    const auto bracket = what.find("] ");
    errorOffset_ = pos > 0 ? pos - 1 : 0;
    error_ = "invalid JSON: " + (syntax != std::string::npos   ? what.substr(syntax)
                                 : bracket != std::string::npos ? what.substr(bracket + 2)
                                                                : what);
    return false;
  }

  // Why the parse stopped ("" when it did not), and at which offset of the text.
  const std::string& error() const { return error_; }
  size_t errorOffset() const { return errorOffset_; }
  int errorLine() { return currentLine(); }
  bool stoppedByDepth() const { return depthExceeded_; }

 private:
  // Inputs are small documents of a few levels; a bound on nesting keeps the memory a document
  // takes in proportion to its size (every value's pointer is kept for its line).
  bool deeper() {
    if (stack_.size() < kMaxJsonDepth) return true;
    depthExceeded_ = true;
    error_ = "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    return false;
  }

  struct Frame {
    bool array;
    size_t index;
    std::string key;
  };
  // Called as each value begins: records array elements' lines and advances their index.
  bool value() {
    if (!stack_.empty() && stack_.back().array) {
      Frame& f = stack_.back();
      f.key = std::to_string(f.index++);
      lines_[pointer()] = currentLine();
    }
    return true;
  }
  std::string pointer() const {
    std::string p;
    for (const Frame& f : stack_) {
      p += '/';
      for (char c : f.key) {
        if (c == '~') p += "~0";
        else if (c == '/') p += "~1";
        else p += c;
      }
    }
    return p;
  }
  int currentLine() {
    // Count newlines up to the furthest character read (the lexer has consumed the token).
    while (counted_ < *furthest_) {
      if (*counted_ == '\n') ++line_;
      ++counted_;
    }
    // The lexer reads one character past a token; a token that ends a line would otherwise
    // be reported on the next.
    return (counted_ > begin_ && counted_[-1] == '\n') ? line_ - 1 : line_;
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  const char* begin_;
  const char** furthest_;
  const char* counted_ = begin_;
  int line_ = 1;
  std::vector<Frame> stack_;
  std::map<std::string, int>& lines_;
  std::string error_;
  size_t errorOffset_ = 0;
  bool depthExceeded_ = false;
};

int lineAtOffset(const std::string& text, size_t offset) {
  // Input that ends early is blamed on its last line, not on the line after a final newline.
  if (!text.empty() && offset >= text.size()) offset = text.size() - 1;
  int line = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) line += (text[i] == '\n');
  return line;
}

}  // namespace

JsonSource JsonSource::parse(const std::string& text, const std::string& fileName) {
  JsonSource src;
  src.file_ = fileName;
  src.lines_[""] = 1;
  const char* begin = text.data();
  const char* furthest = begin;
  LineRecorder recorder(src.root_, begin, &furthest, src.lines_);
  TrackingIterator first{begin, &furthest};
  TrackingIterator last{begin + text.size(), &furthest};
  if (!Json::sax_parse(first, last, &recorder)) {
    const int line = recorder.stoppedByDepth() ? recorder.errorLine() : lineAtOffset(text, recorder.errorOffset());
    throw InputError(fileName, line, recorder.error());
  }
  return src;
}

int JsonSource::lineOf(const std::string& pointer) const {
  std::string p = pointer;
  for (;;) {
    auto it = lines_.find(p);
    if (it != lines_.end()) return it->second;
    const auto slash = p.rfind('/');
    if (slash == std::string::npos) return 1;
    p.resize(slash);
  }
}

void JsonSource::fail(const std::string& pointer, const std::string& problem) const {
  throw InputError(file_, lineOf(pointer), problem);
}

}  // namespace mcsim::fabric
