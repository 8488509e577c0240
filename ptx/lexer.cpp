#include "ptx/lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace mcsim::ptx {

namespace {

bool identStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%'; }
bool identChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

std::string at(uint32_t line) { return "line " + std::to_string(line) + ": "; }

}  // namespace

bool tokenize(const std::string& s, std::vector<Token>* out, std::string* error) {
  out->clear();
  uint32_t line = 1;
  size_t i = 0;
  const size_t n = s.size();
  auto push = [&](Token::Kind k, std::string text, uint64_t bits = 0) {
    Token t;
    t.kind = k;
    t.text = std::move(text);
    t.bits = bits;
    t.line = line;
    out->push_back(std::move(t));
  };
  while (i < n) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      const uint32_t start = line;
      i += 2;
      while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/')) line += s[i++] == '\n' ? 1 : 0;
      if (i + 1 >= n) {
        *error = at(start) + "unterminated /* comment";
        return false;
      }
      i += 2;
    } else if (c == '"') {
      size_t j = i + 1;
      while (j < n && s[j] != '"' && s[j] != '\n') ++j;
      if (j >= n || s[j] != '"') {
        *error = at(line) + "unterminated string";
        return false;
      }
      push(Token::Kind::kString, s.substr(i + 1, j - i - 1));
      i = j + 1;
    } else if (c == '.' && i + 1 < n && identStart(s[i + 1])) {
      // A directive or modifier; `::` joins the parts of modifiers such as .L2::cache_hint.
      size_t j = i + 1;
      while (j < n && (identChar(s[j]) || (s[j] == ':' && j + 1 < n && s[j + 1] == ':' && (j += 1)))) ++j;
      push(Token::Kind::kDirective, s.substr(i, j - i));
      i = j;
    } else if (identStart(c)) {
      size_t j = i + 1;
      while (j < n && identChar(s[j])) ++j;
      push(Token::Kind::kIdent, s.substr(i, j - i));
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      // 0f / 0d hex floats: exactly 8 / 16 hex digits.
      if (c == '0' && i + 1 < n && (s[i + 1] == 'f' || s[i + 1] == 'F' || s[i + 1] == 'd' || s[i + 1] == 'D')) {
        const bool f32 = s[i + 1] == 'f' || s[i + 1] == 'F';
        const size_t digits = f32 ? 8 : 16;
        size_t j = i + 2;
        while (j < n && std::isxdigit(static_cast<unsigned char>(s[j]))) ++j;
        if (j - (i + 2) != digits) {
          *error = at(line) + "bad floating-point constant '" + s.substr(i, j - i) + "' (0f takes 8 hex digits, 0d 16)";
          return false;
        }
        push(f32 ? Token::Kind::kF32 : Token::Kind::kF64, s.substr(i, j - i), std::strtoull(s.c_str() + i + 2, nullptr, 16));
        i = j;
        continue;
      }
      size_t j = i;
      bool isFloat = false;
      if (c == '0' && i + 1 < n && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        j = i + 2;
        while (j < n && std::isxdigit(static_cast<unsigned char>(s[j]))) ++j;
      } else if (c == '0' && i + 1 < n && (s[i + 1] == 'b' || s[i + 1] == 'B')) {
        j = i + 2;
        while (j < n && (s[j] == '0' || s[j] == '1')) ++j;
      } else {
        while (j < n && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
        if (j < n && s[j] == '.') {
          isFloat = true;
          ++j;
          while (j < n && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
        }
        if (j < n && (s[j] == 'e' || s[j] == 'E')) {
          isFloat = true;
          ++j;
          if (j < n && (s[j] == '+' || s[j] == '-')) ++j;
          while (j < n && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
        }
      }
      const std::string text = s.substr(i, j - i);
      if (isFloat) {
        const double d = std::strtod(text.c_str(), nullptr);
        uint64_t bits;
        std::memcpy(&bits, &d, sizeof bits);
        push(Token::Kind::kF64, text, bits);
      } else {
        errno = 0;
        uint64_t v;
        if (text.size() > 2 && (text[1] == 'b' || text[1] == 'B')) {
          v = std::strtoull(text.c_str() + 2, nullptr, 2);
        } else {
          v = std::strtoull(text.c_str(), nullptr, 0);  // base from the prefix: 0x hex, 0 octal
        }
        if (errno == ERANGE) {
          *error = at(line) + "integer constant '" + text + "' does not fit 64 bits";
          return false;
        }
        push(Token::Kind::kInt, text, v);
      }
      if (j < n && (s[j] == 'U' || s[j] == 'u')) ++j;
      if (j < n && identChar(s[j])) {
        *error = at(line) + "bad constant '" + s.substr(i, j + 1 - i) + "'";
        return false;
      }
      i = j;
    } else if (std::strchr(",;:{}[]()<>+-!@|=", c) != nullptr) {
      push(Token::Kind::kPunct, std::string(1, c));
      ++i;
    } else {
      *error = at(line) + "unexpected character '" + std::string(1, c) + "'";
      return false;
    }
  }
  push(Token::Kind::kEnd, "end of text");
  return true;
}

}  // namespace mcsim::ptx
