// Linking relocatable PTX (linker.h).
#include "ptx/linker.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "ptx/parser.h"

namespace mcsim::ptx {

namespace {

bool identStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%'; }
bool identChar(char c) { return identStart(c) || (c >= '0' && c <= '9'); }

// A module-level statement of an object: a declaration or definition, the header, or something
// the link drops (.file, .section, .pragma).
struct Stmt {
  enum class Kind : uint8_t { kHeader, kFunction, kVariable, kDropped };
  enum class Linkage : uint8_t { kLocal, kVisible, kExtern, kWeak };
  Kind kind = Kind::kDropped;
  Linkage linkage = Linkage::kLocal;
  bool entry = false;
  bool dynamicShared = false;  // `.extern .shared x[]`: the kernel's dynamic shared memory
  std::string name;
  size_t begin = 0, end = 0;             // the statement's text
  size_t declBegin = 0;                  // where .func / .entry or the variable's space starts
  size_t bodyBegin = std::string::npos;  // a function's '{'
  uint32_t line = 0;
};

// Reads an object's module-level statements; function bodies and .section blocks are skipped by
// their braces (strings and comments inside them skipped too).
class Scanner {
 public:
  explicit Scanner(const std::string& s) : s_(s.data()), n_(s.size()) {}

  bool run(std::vector<Stmt>* out, std::string* error) {
    for (;;) {
      if (!blank(error)) return false;
      if (i_ >= n_) return true;
      Stmt st;
      st.begin = i_;
      st.line = line_;
      // .version, .target, .address_size and .file end with their line, not with ';'.
      if (lineDirective()) {
        const void* nl = std::memchr(s_ + i_, '\n', n_ - i_);
        i_ = nl == nullptr ? n_ : static_cast<size_t>(static_cast<const char*>(nl) - s_);
        st.end = i_;
        const std::string d(s_ + st.begin, std::min<size_t>(st.end - st.begin, 13));
        st.kind = d.rfind(".file", 0) == 0 ? Stmt::Kind::kDropped : Stmt::Kind::kHeader;
        out->push_back(std::move(st));
        continue;
      }
      std::vector<std::pair<size_t, size_t>> words;  // identifiers and directives, at paren depth 0
      int parens = 0;
      bool closed = false, init = false, emptyBrackets = false;
      size_t lastOpenBracket = std::string::npos;
      while (!closed) {
        if (!blank(error)) return false;
        if (i_ >= n_) return fail(error, "a statement is not closed");
        const char c = s_[i_];
        if (c == '"') {
          if (!string(error)) return false;
        } else if (c == '.' || identChar(c)) {
          const size_t b = i_++;
          while (i_ < n_ && identChar(s_[i_])) ++i_;
          if (parens == 0 && !init) words.emplace_back(b, i_);
        } else {
          ++i_;
          if (c == '(') ++parens;
          if (c == ')') --parens;
          if (c == '=' && parens == 0) init = true;
          if (c == '[') lastOpenBracket = i_;
          if (c == ']' && lastOpenBracket == i_ - 1 && !init) emptyBrackets = true;
          if (c == ';' && parens == 0) {
            closed = true;
          } else if (c == '{' && parens == 0 && !init) {
            st.bodyBegin = i_ - 1;
            if (!braces(error)) return false;
            closed = true;
          }
        }
      }
      st.end = i_;
      classify(st, words, emptyBrackets);
      out->push_back(std::move(st));
    }
  }

 private:
  bool lineDirective() const {
    for (const char* d : {".version", ".target", ".address_size", ".file"}) {
      const size_t n = std::strlen(d);
      if (n_ - i_ > n && std::memcmp(s_ + i_, d, n) == 0 && !identChar(s_[i_ + n])) return true;
    }
    return false;
  }
  bool fail(std::string* error, const std::string& why) {
    *error = "line " + std::to_string(line_) + ": " + why;
    return false;
  }
  // Skips blanks and comments.
  bool blank(std::string* error) {
    while (i_ < n_) {
      const char c = s_[i_];
      if (c == '\n') {
        ++line_;
        ++i_;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++i_;
      } else if (c == '/' && i_ + 1 < n_ && s_[i_ + 1] == '/') {
        const void* nl = std::memchr(s_ + i_, '\n', n_ - i_);
        i_ = nl == nullptr ? n_ : static_cast<size_t>(static_cast<const char*>(nl) - s_);
      } else if (c == '/' && i_ + 1 < n_ && s_[i_ + 1] == '*') {
        for (i_ += 2; i_ + 1 < n_ && !(s_[i_] == '*' && s_[i_ + 1] == '/'); ++i_) line_ += s_[i_] == '\n';
        if (i_ + 1 >= n_) return fail(error, "an unterminated comment");
        i_ += 2;
      } else {
        return true;
      }
    }
    return true;
  }
  bool string(std::string* error) {
    for (++i_; i_ < n_ && s_[i_] != '"'; ++i_) {
      if (s_[i_] == '\\') ++i_;
      else if (s_[i_] == '\n') ++line_;
    }
    if (i_ >= n_) return fail(error, "an unterminated string");
    ++i_;
    return true;
  }
  // From just after a '{' to just after its '}'.
  bool braces(std::string* error) {
    for (int depth = 1; depth > 0;) {
      if (i_ >= n_) return fail(error, "a body is not closed");
      const char c = s_[i_];
      if (c == '{') {
        ++depth;
        ++i_;
      } else if (c == '}') {
        --depth;
        ++i_;
      } else if (c == '"') {
        if (!string(error)) return false;
      } else if (c == '/' || c == '\n') {
        if (c == '/' && (i_ + 1 >= n_ || (s_[i_ + 1] != '/' && s_[i_ + 1] != '*'))) {
          ++i_;
          continue;
        }
        if (!blank(error)) return false;
      } else {
        ++i_;
      }
    }
    return true;
  }
  void classify(Stmt& st, const std::vector<std::pair<size_t, size_t>>& words, bool emptyBrackets) {
    auto word = [&](size_t k) { return std::string(s_ + words[k].first, words[k].second - words[k].first); };
    size_t k = 0;
    if (words.empty()) return;
    const std::string first = word(0);
    if (first == ".version" || first == ".target" || first == ".address_size") {
      st.kind = Stmt::Kind::kHeader;
      st.name = first;
      return;
    }
    for (; k < words.size(); ++k) {
      const std::string w = word(k);
      if (w == ".visible") st.linkage = Stmt::Linkage::kVisible;
      else if (w == ".extern") st.linkage = Stmt::Linkage::kExtern;
      else if (w == ".weak" || w == ".common") st.linkage = Stmt::Linkage::kWeak;
      else break;
    }
    if (k >= words.size()) return;
    const std::string d = word(k);
    st.declBegin = words[k].first;
    if (d == ".func" || d == ".entry") {
      st.kind = Stmt::Kind::kFunction;
      st.entry = d == ".entry";
      // The name: the first identifier after the directive at paren depth 0 (return parameters
      // are inside parentheses, so not among `words`).
      for (size_t j = k + 1; j < words.size(); ++j) {
        if (s_[words[j].first] != '.') {
          st.name = word(j);
          break;
        }
      }
      return;
    }
    if (d == ".global" || d == ".const" || d == ".shared") {
      st.kind = Stmt::Kind::kVariable;
      for (size_t j = k + 1; j < words.size(); ++j) {
        if (s_[words[j].first] != '.' && !(s_[words[j].first] >= '0' && s_[words[j].first] <= '9')) {
          st.name = word(j);
          break;
        }
      }
      st.dynamicShared = d == ".shared" && st.linkage == Stmt::Linkage::kExtern && emptyBrackets;
    }
  }

  const char* s_;
  size_t n_;
  size_t i_ = 0;
  uint32_t line_ = 1;
};

struct ObjectInfo {
  const LinkObject* object = nullptr;
  std::vector<Stmt> stmts;
  std::unordered_map<std::string, uint32_t> local;     // name -> statement: this object's own definitions
  std::unordered_map<std::string, uint32_t> declared;  // name -> statement: every symbol it declares
};

using Ref = std::pair<uint32_t, uint32_t>;  // (object, statement)

bool isBuiltin(const std::string& n) { return n == "vprintf" || n == "__assertfail"; }

}  // namespace

std::string LinkedPtx::where(uint32_t line) const {
  const Piece* best = nullptr;
  for (const Piece& p : pieces)
    if (p.line <= line) best = &p;
  if (best == nullptr) return "";
  return objectNames[best->object] + ":" + std::to_string(best->objectLine + (line - best->line));
}

std::string LinkedPtx::translate(const std::string& message) const {
  // "<name>:<line>: why" -> "<object>:<line>: why"
  const size_t colon = message.find(':');
  if (colon == std::string::npos) return message;
  size_t end = colon + 1;
  while (end < message.size() && message[end] >= '0' && message[end] <= '9') ++end;
  if (end == colon + 1) return message;
  const std::string at = where(static_cast<uint32_t>(std::stoul(message.substr(colon + 1, end - colon - 1))));
  return at.empty() ? message : at + message.substr(end);
}

struct PtxLinker::State {
  std::vector<LinkObject> objects;
  std::vector<ObjectInfo> info;
  // Definitions visible to every object: name -> (object, statement); weak ones yield.
  std::unordered_map<std::string, Ref> global;
  std::unordered_map<std::string, bool> globalWeak;
  // Builtins (vprintf, __assertfail) and dynamic shared arrays, declared .extern and defined by
  // none: the first object's declaration stands for all, so that every link declares them alike.
  std::unordered_map<std::string, Ref> firstExtern;
  bool scanned = false;
  std::string error;
};

PtxLinker::PtxLinker(std::vector<LinkObject> objects) : s_(std::make_unique<State>()) { s_->objects = std::move(objects); }
PtxLinker::~PtxLinker() = default;

bool PtxLinker::scan(std::string* error) {
  if (s_->scanned) {
    *error = s_->error;
    return s_->error.empty();
  }
  s_->scanned = true;
  const std::vector<LinkObject>& objects = s_->objects;
  std::vector<ObjectInfo>& info = s_->info;
  auto& global = s_->global;
  auto& globalWeak = s_->globalWeak;
  info.resize(objects.size());
  for (uint32_t o = 0; o < objects.size(); ++o) {
    ObjectInfo& oi = info[o];
    oi.object = &objects[o];
    std::string why;
    if (!Scanner(*objects[o].text).run(&oi.stmts, &why)) {
      *error = s_->error = objects[o].name + ": " + why;
      return false;
    }
    for (uint32_t k = 0; k < oi.stmts.size(); ++k) {
      const Stmt& st = oi.stmts[k];
      if ((st.kind != Stmt::Kind::kFunction && st.kind != Stmt::Kind::kVariable) || st.name.empty()) continue;
      const bool definition = st.linkage != Stmt::Linkage::kExtern &&
                              (st.kind == Stmt::Kind::kVariable || st.bodyBegin != std::string::npos);
      if (oi.declared.count(st.name) == 0 || definition) oi.declared[st.name] = k;
      if (!definition && (st.dynamicShared || (st.kind == Stmt::Kind::kFunction && isBuiltin(st.name))))
        s_->firstExtern.emplace(st.name, Ref{o, k});
      if (!definition) continue;
      if (st.linkage == Stmt::Linkage::kLocal) {
        oi.local[st.name] = k;
        continue;
      }
      const bool weak = st.linkage == Stmt::Linkage::kWeak;
      auto it = global.find(st.name);
      if (it == global.end()) {
        global.emplace(st.name, Ref{o, k});
        globalWeak[st.name] = weak;
      } else if (!weak && !globalWeak[st.name]) {
        *error = s_->error = "'" + st.name + "' is defined in both " + objects[it->second.first].name + " (line " +
                 std::to_string(info[it->second.first].stmts[it->second.second].line) + ") and " + objects[o].name +
                 " (line " + std::to_string(st.line) + ")";
        return false;
      } else if (!weak) {
        it->second = Ref{o, k};
        globalWeak[st.name] = false;
      }
    }
  }
  return true;
}

bool PtxLinker::link(const std::vector<std::string>& roots, LinkedPtx* out, std::string* error,
                     size_t tableBytes) const {
  return linkWith(roots, out, error, tableBytes, Mode::kKernels);
}

bool PtxLinker::linkOnCall(const std::string& kernel, const std::string& function, LinkedPtx* out,
                           std::string* error) const {
  return linkWith({kernel, function}, out, error, 0, Mode::kOnCall);
}

bool PtxLinker::linkProgram(LinkedPtx* out, std::string* error, bool variables) const {
  return linkWith({}, out, error, SIZE_MAX, variables ? Mode::kProgram : Mode::kProgramKernels);
}

bool PtxLinker::linkVariables(LinkedPtx* out, std::string* error) const {
  return linkWith({}, out, error, 0, Mode::kVariables);
}

std::vector<std::string> PtxLinker::kernels() const {
  std::vector<std::string> out;
  for (const ObjectInfo& oi : s_->info)
    for (const Stmt& st : oi.stmts)
      if (st.kind == Stmt::Kind::kFunction && st.entry && st.bodyBegin != std::string::npos && !st.name.empty())
        out.push_back(st.name);
  return out;
}

bool PtxLinker::linkWith(const std::vector<std::string>& roots, LinkedPtx* out, std::string* error, size_t tableBytes,
                         Mode mode) const {
  const bool onCall = mode == Mode::kOnCall;
  *out = LinkedPtx{};
  if (!s_->scanned || !s_->error.empty()) {
    *error = s_->scanned ? s_->error : "the objects were not scanned";
    return false;
  }
  const std::vector<LinkObject>& objects = s_->objects;
  const std::vector<ObjectInfo>& info = s_->info;
  const auto& global = s_->global;
  for (const LinkObject& o : objects) out->objectNames.push_back(o.name);
  out->objectsScanned = objects.size();

  // What the roots reach. A function is defined (its body emitted) when code names it, declared
  // when only an initialiser does.
  std::map<Ref, bool> functions;  // -> body wanted
  std::set<Ref> variables;
  std::vector<Ref> todo;
  // Resolves name `n` as object `o` sees it: its own definition, else the global one; an extern
  // declaration with no definition anywhere is kept as declared (dynamic shared memory,
  // builtins) or refused.
  auto resolve = [&](uint32_t o, const std::string& n, Ref* r) -> int {  // 1 found, 0 not a symbol, -1 error
    const ObjectInfo& oi = info[o];
    auto l = oi.local.find(n);
    if (l != oi.local.end()) {
      *r = Ref{o, l->second};
      return 1;
    }
    auto d = oi.declared.find(n);
    if (d == oi.declared.end()) return 0;  // not a symbol of this object: a label, a parameter, an opcode
    auto g = global.find(n);
    if (g != global.end()) {
      *r = g->second;
      return 1;
    }
    const Stmt& st = oi.stmts[d->second];
    if (st.dynamicShared || (st.kind == Stmt::Kind::kFunction && isBuiltin(n))) {
      auto f = s_->firstExtern.find(n);
      *r = f != s_->firstExtern.end() ? f->second : Ref{o, d->second};
      return 1;
    }
    *error = "'" + n + "', declared .extern in " + objects[o].name + " (line " + std::to_string(st.line) +
             "), is defined in none of the " + std::to_string(objects.size()) + " objects";
    out->unresolved = true;
    return -1;
  };
  size_t added = 0;  // bytes of statements taken in
  auto want = [&](const Ref& r, bool body) {
    const Stmt& st = info[r.first].stmts[r.second];
    if (st.kind == Stmt::Kind::kVariable) {
      if (variables.insert(r).second) {
        todo.push_back(r);
        added += st.end - st.begin;
      }
      return;
    }
    const bool hasBody = st.bodyBegin != std::string::npos && st.linkage != Stmt::Linkage::kExtern;
    auto it = functions.find(r);
    if (it == functions.end()) {
      functions[r] = body && hasBody;
      if (body && hasBody) todo.push_back(r);
    } else if (body && hasBody && !it->second) {
      it->second = true;
      todo.push_back(r);
    } else {
      return;
    }
    if (body && hasBody) added += st.end - st.begin;
  };
  auto wantRoot = [&](size_t k) -> bool {
    const std::string& root = roots[k];
    auto g = global.find(root);
    // A link for a call (linkOnCall): the kernel, then the function called, which may be one of
    // an object's own (non-.visible) functions: the first object's that defines it.
    if (g == global.end() && onCall && k > 0) {
      // One of an object's own functions, by its name in the kernel's link: `name$oN` where
      // the link renamed it apart (object N), else the first object's that defines it.
      std::string base = root;
      uint32_t only = UINT32_MAX;
      const size_t dollar = root.rfind("$o");
      if (dollar != std::string::npos && dollar + 2 < root.size() &&
          root.find_first_not_of("0123456789", dollar + 2) == std::string::npos) {
        base = root.substr(0, dollar);
        only = static_cast<uint32_t>(std::stoul(root.substr(dollar + 2)));
      }
      bool found = false;
      for (uint32_t o = 0; o < info.size() && !found; ++o) {
        if (only != UINT32_MAX && o != only) continue;
        auto l = info[o].local.find(base);
        if (l == info[o].local.end() || info[o].stmts[l->second].kind != Stmt::Kind::kFunction) continue;
        want(Ref{o, l->second}, true);
        found = true;
      }
      if (!found) {
        *error = "no object defines a function '" + root + "'";
        return false;
      }
      return true;
    }
    if (g == global.end() || info[g->second.first].stmts[g->second.second].entry != (k == 0 || !onCall)) {
      *error = k > 0 && onCall ? "no object defines a function '" + root + "'" : "no object defines a kernel '" + root + "'";
      return false;
    }
    want(g->second, true);
    return true;
  };
  for (size_t k = 0; k < roots.size() && (k == 0 || !onCall); ++k)
    if (!wantRoot(k)) return false;
  if (mode == Mode::kProgram || mode == Mode::kProgramKernels) {
    // Every kernel, and every variable a host may look up (cuModuleGetGlobal): the definitions
    // that stand (an object's own kernel, or the one every object resolves a name to).
    for (uint32_t o = 0; o < info.size(); ++o) {
      for (uint32_t k = 0; k < info[o].stmts.size(); ++k) {
        const Stmt& st = info[o].stmts[k];
        if (st.name.empty() || st.linkage == Stmt::Linkage::kExtern) continue;
        const bool kernel = st.kind == Stmt::Kind::kFunction && st.entry && st.bodyBegin != std::string::npos;
        const bool variable = mode == Mode::kProgram && st.kind == Stmt::Kind::kVariable &&
                              st.linkage != Stmt::Linkage::kLocal &&
                              info[o].object->text->compare(st.declBegin, 7, ".shared") != 0;
        if (!kernel && !variable) continue;
        if (st.linkage != Stmt::Linkage::kLocal) {
          auto g = global.find(st.name);
          if (g == global.end() || g->second != Ref{o, k}) continue;
        }
        want(Ref{o, k}, true);
      }
    }
    if (todo.empty()) {
      *error = "the " + std::to_string(objects.size()) + " objects define no kernel and no variable";
      return false;
    }
  }
  // Takes in what the statements in `todo` name, transitively.
  auto drain = [&]() -> bool {
  while (!todo.empty()) {
    const Ref r = todo.back();
    todo.pop_back();
    const Stmt& st = info[r.first].stmts[r.second];
    const std::string& s = *objects[r.first].text;
    const bool code = st.kind == Stmt::Kind::kFunction;
    // Every identifier of the statement (past its name) that is a symbol of its object.
    size_t i = st.declBegin;
    while (i < st.end) {
      const char c = s[i];
      if (c == '"') {
        for (++i; i < st.end && s[i] != '"'; ++i)
          if (s[i] == '\\') ++i;
        ++i;
      } else if (c == '/' && i + 1 < st.end && s[i + 1] == '/') {
        while (i < st.end && s[i] != '\n') ++i;
      } else if (c == '/' && i + 1 < st.end && s[i + 1] == '*') {
        for (i += 2; i + 1 < st.end && !(s[i] == '*' && s[i + 1] == '/'); ++i) {
        }
        i += 2;
      } else if (c == '.' || c == '%' || (c >= '0' && c <= '9')) {
        for (++i; i < st.end && identChar(s[i]); ++i) {
        }
      } else if (identStart(c)) {
        const size_t b = i;
        for (++i; i < st.end && identChar(s[i]); ++i) {
        }
        const std::string n(s, b, i - b);
        if (n == st.name) continue;
        Ref target;
        const int found = resolve(r.first, n, &target);
        if (found < 0) return false;
        if (found > 0) want(target, code);
      } else {
        ++i;
      }
    }
  }

    return true;
  };
  if (!drain()) return false;
  for (size_t k = 1; k < roots.size() && onCall; ++k)
    if (!wantRoot(k)) return false;
  if (!drain()) return false;
  if (onCall) tableBytes = 0;
  // Functions only an initialiser names (tables of function pointers): defined too, with what
  // they reach, while that adds at most `tableBytes` of PTX; beyond, all of them stay declared only.
  {
    const auto savedFunctions = functions;
    const auto savedVariables = variables;
    added = 0;
    bool over = false;
    for (;;) {
      std::vector<Ref> tables;
      for (const auto& [r, body] : functions) {
        const Stmt& st = info[r.first].stmts[r.second];
        if (!body && st.bodyBegin != std::string::npos && st.linkage != Stmt::Linkage::kExtern) tables.push_back(r);
      }
      if (tables.empty()) break;
      for (const Ref& r : tables) want(r, true);
      if (added > tableBytes) {
        over = true;
        break;
      }
      if (!drain()) return false;
      if (added > tableBytes) {
        over = true;
        break;
      }
    }
    if (over || onCall) {
      functions = savedFunctions;
      variables = savedVariables;
      todo.clear();
      out->tablesDeclaredOnly = true;
    }
  }
  // The image's layout (every link of one kernel, or of a function at its first call, and the
  // image's variables alone): every function declared and every .global and .const variable laid
  // out, all in one order, so that each function has the same address and each variable the same
  // place in all of them. The driver places the variables once per context, and every kernel
  // linked from the objects reaches that one copy (docs/ptx.md, "Linking relocatable PTX"); the
  // functions a kernel's link declares only are linked at their first call (linkOnCall).
  const bool imageLayout = mode == Mode::kKernels || mode == Mode::kOnCall || mode == Mode::kVariables;
  if (imageLayout) {
    for (uint32_t o = 0; o < info.size(); ++o) {
      for (uint32_t k = 0; k < info[o].stmts.size(); ++k) {
        const Stmt& st = info[o].stmts[k];
        if (st.name.empty() || st.linkage == Stmt::Linkage::kExtern) continue;
        const bool function = st.kind == Stmt::Kind::kFunction && !st.entry && st.bodyBegin != std::string::npos;
        const bool variable = st.kind == Stmt::Kind::kVariable && info[o].object->text->compare(st.declBegin, 7, ".shared") != 0;
        if (!function && !variable) continue;
        // The definition that stands: the object's own, or the one every object resolves to.
        if (st.linkage != Stmt::Linkage::kLocal) {
          auto g = global.find(st.name);
          if (g == global.end() || g->second != Ref{o, k}) continue;
        }
        if (function) functions.emplace(Ref{o, k}, false);
        else variables.insert(Ref{o, k});
      }
    }
    // And the builtins any object declares, as the first object that does.
    for (const auto& [n, r] : s_->firstExtern)
      if (info[r.first].stmts[r.second].kind == Stmt::Kind::kFunction) functions.emplace(r, false);
  }

  // Names: an object's own symbols keep theirs unless another emitted symbol has it.
  std::map<std::string, int> uses;
  auto emittedName = [&](const Ref& r) -> const std::string& { return info[r.first].stmts[r.second].name; };
  std::vector<Ref> emitted;
  for (const auto& [r, body] : functions) emitted.push_back(r);
  for (const Ref& r : variables) emitted.push_back(r);
  if (imageLayout) {
    // The same names in every link of the image: a symbol is renamed when any symbol that stands
    // among the objects has its name, whether this link emits that one or not.
    for (uint32_t o = 0; o < info.size(); ++o) {
      for (uint32_t k = 0; k < info[o].stmts.size(); ++k) {
        const Stmt& st = info[o].stmts[k];
        if (st.name.empty() || st.linkage == Stmt::Linkage::kExtern ||
            (st.kind != Stmt::Kind::kFunction && st.kind != Stmt::Kind::kVariable))
          continue;
        if (st.linkage != Stmt::Linkage::kLocal) {
          auto g = global.find(st.name);
          if (g == global.end() || g->second != Ref{o, k}) continue;
        }
        ++uses[st.name];
      }
    }
    for (const auto& [n, r] : s_->firstExtern) ++uses[n];
  } else {
    for (const Ref& r : emitted) ++uses[emittedName(r)];
  }
  std::vector<std::map<std::string, std::string>> rename(objects.size());
  for (const Ref& r : emitted) {
    const Stmt& st = info[r.first].stmts[r.second];
    if (st.linkage == Stmt::Linkage::kLocal && uses[st.name] > 1)
      rename[r.first][st.name] = st.name + "$o" + std::to_string(r.first);
  }

  // The text. Identifiers an object renamed are replaced as its statements are copied.
  std::string& t = out->text;
  uint32_t line = 1;
  auto append = [&](const std::string& x) {
    for (char c : x) line += c == '\n';
    t += x;
  };
  auto copy = [&](uint32_t o, size_t b, size_t e) {
    const std::string& s = *objects[o].text;
    const auto& names = rename[o];
    if (names.empty()) {
      for (size_t i = b; i < e; ++i) line += s[i] == '\n';
      t.append(s, b, e - b);
      return;
    }
    size_t i = b;
    while (i < e) {
      const char c = s[i];
      if (identStart(c) && (i == b || !identChar(s[i - 1])) && (i == b || s[i - 1] != '.')) {
        size_t j = i + 1;
        while (j < e && identChar(s[j])) ++j;
        auto it = names.find(std::string(s, i, j - i));
        if (it != names.end()) t += it->second;
        else t.append(s, i, j - i);
        i = j;
      } else {
        line += c == '\n';
        t += c;
        ++i;
      }
    }
  };
  // Header: the first object's .version / .target / .address_size.
  for (const Stmt& st : info.empty() ? std::vector<Stmt>{} : info[0].stmts) {
    if (st.kind != Stmt::Kind::kHeader) continue;
    copy(0, st.begin, st.end);
    append("\n");
  }
  append("// linked by mcsim from " + std::to_string(objects.size()) + " relocatable objects\n");
  // Every function emitted, declared first (initialisers and calls may name it before its body).
  for (const auto& [r, body] : functions) {
    const Stmt& st = info[r.first].stmts[r.second];
    if (st.entry) continue;
    size_t end = st.bodyBegin != std::string::npos ? st.bodyBegin : st.end - 1;  // before '{' or ';'
    const std::string& s = *objects[r.first].text;
    while (end > st.declBegin && (s[end - 1] == ' ' || s[end - 1] == '\n' || s[end - 1] == '\t' || s[end - 1] == '\r')) --end;
    append(isBuiltin(st.name) || st.linkage == Stmt::Linkage::kExtern ? ".extern " : "");
    copy(r.first, st.declBegin, end);
    append(";\n");
    if (!body) ++out->functionsDeclared;
  }
  for (const Ref& r : variables) {
    const Stmt& st = info[r.first].stmts[r.second];
    out->pieces.push_back({line, r.first, st.line});
    copy(r.first, st.begin, st.end);
    append("\n");
    ++out->variables;
  }
  for (const auto& [r, body] : functions) {
    if (!body) continue;
    const Stmt& st = info[r.first].stmts[r.second];
    append("// " + objects[r.first].name + ":" + std::to_string(st.line) + "\n");
    out->pieces.push_back({line, r.first, st.line});
    copy(r.first, st.begin, st.end);
    append("\n");
    ++out->functionsDefined;
  }
  return true;
}

bool linkPtx(const std::vector<LinkObject>& objects, const std::vector<std::string>& roots, LinkedPtx* out,
             std::string* error) {
  PtxLinker linker(objects);
  return linker.scan(error) && linker.link(roots, out, error);
}

}  // namespace mcsim::ptx
