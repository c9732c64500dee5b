#include "catalog/parser.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "format/stable_layout.h"
#include "format/type_model.h"

#include <eventfs/record.h>

namespace eventfs {
namespace {

constexpr unsigned kMaxCount = 65536;
// Names become directory entries and format lines: no longer than a file
// name may be (statfs's f_namemax).
constexpr std::size_t kMaxWord = 255;
// A catalog is text a person writes; anything bigger is not one.
constexpr std::size_t kMaxCatalogBytes = 4 << 20;
// EVENTFS_RECORD_MAX_SIZE less the record header, rounded down to 8.
constexpr std::size_t kMaxPayload = EVENTFS_RECORD_MAX_SIZE - sizeof(eventfs_record_header);

struct Token {
  enum Kind { Word, Punct, End } kind = End;
  std::string text;
  int line = 0;
};

struct Failure {
  int line;
  std::string message;
};

[[noreturn]] void fail(int line, std::string message) { throw Failure{line, std::move(message)}; }

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    return std::all_of(s.begin() + 2, s.end(), [](char c) { return std::isxdigit((unsigned char)c); });
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit((unsigned char)c); });
}

// A whole number within [1, max], or 0 when it is not one (or too large).
unsigned long parse_bounded(const std::string& s, unsigned long max) {
  if (!is_number(s)) return 0;
  errno = 0;
  unsigned long v = std::strtoul(s.c_str(), nullptr, 0);
  if (errno == ERANGE || v > max) return 0;
  return v;
}

// Names the mount itself uses at the top level.
bool reserved_event_name(const std::string& n) {
  for (const char* r : {"README", "available_events", "unavailable_events", "error_log", "raw", "per_cpu",
                        "trace_pipe", "trace_clock", "variables", "header", "types"})
    if (n == r) return true;
  return false;
}

bool is_identifier(const std::string& s) {
  return !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0])) &&
         std::all_of(s.begin(), s.end(), is_word_char);
}

std::vector<Token> lex(std::string_view text) {
  std::vector<Token> out;
  int line = 1;
  std::size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
    } else if (c == '#' || (c == '/' && i + 1 < text.size() && text[i + 1] == '/')) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      int start = line;
      i += 2;
      while (i + 1 < text.size() && !(text[i] == '*' && text[i + 1] == '/')) {
        if (text[i] == '\n') ++line;
        ++i;
      }
      if (i + 1 >= text.size()) fail(start, "unterminated comment");
      i += 2;
    } else if (is_word_char(c)) {
      std::size_t j = i;
      while (j < text.size() && is_word_char(text[j])) ++j;
      if (j - i > kMaxWord)
        fail(line, fmt::format("syntax error: a word of {} characters (names are at most {})", j - i, kMaxWord));
      out.push_back({Token::Word, std::string(text.substr(i, j - i)), line});
      i = j;
    } else if (c != '\0' && std::strchr("(),=|:", c)) {
      out.push_back({Token::Punct, std::string(1, c), line});
      ++i;
    } else {
      std::string shown = std::isprint(static_cast<unsigned char>(c))
                              ? fmt::format("'{}'", c)
                              : fmt::format("byte 0x{:02x}", static_cast<unsigned char>(c));
      fail(line, fmt::format("syntax error: unexpected character {}", shown));
    }
  }
  out.push_back({Token::End, "", line});
  return out;
}

std::string describe(const Token& t) {
  if (t.kind == Token::End) return "end of file";
  return fmt::format("'{}'", t.text);
}

class Parser {
 public:
  Parser(std::vector<Token> toks, const std::string& file, const Catalog& existing)
      : toks_(std::move(toks)), file_(file), existing_(existing) {}

  std::vector<StableEvent> parse() {
    while (peek().kind != Token::End) parse_event();
    return std::move(events_);
  }

 private:
  const Token& peek(std::size_t ahead = 0) const {
    return toks_[std::min(pos_ + ahead, toks_.size() - 1)];
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool at_punct(const char* p) const { return peek().kind == Token::Punct && peek().text == p; }
  void expect_punct(const char* p, const char* context) {
    if (!at_punct(p))
      fail(peek().line, fmt::format("syntax error: expected '{}' {}, found {}", p, context,
                                    describe(peek())));
    next();
  }
  const Token& expect_word(const char* what) {
    if (peek().kind != Token::Word)
      fail(peek().line, fmt::format("syntax error: expected {}, found {}", what, describe(peek())));
    return next();
  }
  std::string expect_identifier(const char* what) {
    const Token& t = expect_word(what);
    if (!is_identifier(t.text))
      fail(t.line, fmt::format("syntax error: '{}' is not a valid {}", t.text, what));
    return t.text;
  }

  const StableEvent* find_event(const std::string& name) const {
    if (const StableEvent* e = existing_.find(name)) return e;
    for (const auto& e : events_)
      if (e.name == name) return &e;
    return nullptr;
  }
  const StableEvent* find_id(std::uint32_t id) const {
    for (const auto& e : existing_.events)
      if (e.id == id) return &e;
    for (const auto& e : events_)
      if (e.id == id) return &e;
    return nullptr;
  }

  RawEventName parse_raw_name() {
    const Token& sys = expect_word("a raw event source (system:event)");
    if (!at_punct(":"))
      fail(sys.line, fmt::format("bad raw event source '{}': expected system:event", sys.text));
    next();
    const Token& ev = expect_word("a raw event name after ':'");
    return {sys.text, ev.text};
  }

  void parse_event() {
    const Token& kw = expect_word("STABLE_EVENT");
    if (kw.text != "STABLE_EVENT")
      fail(kw.line, fmt::format("syntax error: unknown keyword '{}' (expected STABLE_EVENT)", kw.text));
    StableEvent ev;
    ev.file = file_;
    ev.line = kw.line;
    expect_punct("(", "after STABLE_EVENT");
    ev.name = expect_identifier("event name");
    if (reserved_event_name(ev.name))
      fail(kw.line, fmt::format("event name '{}' is reserved: the mount uses it for its own file", ev.name));
    if (const StableEvent* prev = find_event(ev.name))
      fail(kw.line, fmt::format("duplicate event '{}' (first declared at {}:{})", ev.name,
                                prev->file, prev->line));
    if (!at_punct(","))
      fail(peek().line, fmt::format("missing source for event '{}': expected ', system:event'", ev.name));
    next();
    ev.sources.push_back(parse_raw_name());
    while (at_punct("|")) {
      next();
      ev.sources.push_back(parse_raw_name());
    }
    expect_punct(",", "after the raw event source");
    if (peek().kind == Token::Word && peek().text == "id" && peek(1).text == "=") {
      int line = next().line;
      next();
      const Token& num = expect_word("an event id");
      unsigned long v = 0;
      if ((v = parse_bounded(num.text, 0x7ffffffful)) == 0)
        fail(line, fmt::format("bad id '{}' for event '{}' (expected 1 to 2147483647)", num.text, ev.name));
      ev.id = static_cast<std::uint32_t>(v);
      ev.explicit_id = true;
      expect_punct(",", "after the event id");
    } else {
      ev.id = derived_event_id(ev.name);
    }
    if (const StableEvent* other = find_id(ev.id))
      fail(kw.line, fmt::format("duplicate id {} for event '{}' (also event '{}' at {}:{})", ev.id,
                                ev.name, other->name, other->file, other->line));
    while (!at_punct(")")) {
      if (peek().kind == Token::End)
        fail(peek().line, fmt::format("syntax error: unexpected end of file in STABLE_EVENT({}) begun at line {}",
                                      ev.name, ev.line));
      parse_field(ev);
    }
    next();
    if (ev.fields.empty()) fail(ev.line, fmt::format("event '{}' has no fields", ev.name));
    // A record must fit the binary framing (include/eventfs/record.h).
    std::size_t size = layout_of(ev.format_fields()).size;
    if (size > kMaxPayload)
      fail(ev.line, fmt::format("event '{}' is {} bytes; a stable record holds at most {}", ev.name, size,
                                kMaxPayload));
    events_.push_back(std::move(ev));
  }

  ScalarType parse_type() {
    int line = peek().line;
    std::string name;
    while (peek().kind == Token::Word) {
      if (!name.empty()) name += ' ';
      name += next().text;
    }
    if (name.empty())
      fail(line, fmt::format("syntax error: expected a type, found {}", describe(peek())));
    auto t = stable_type(name);
    if (!t) fail(line, fmt::format("unknown type '{}'", name));
    return *t;
  }

  void parse_field(StableEvent& ev) {
    const Token& macro = expect_word("__field, __array or __enum");
    StableField f;
    f.line = macro.line;
    if (macro.text == "__field" || macro.text == "__enum") {
      f.decl.shape = FieldShape::Scalar;
    } else if (macro.text == "__array") {
      f.decl.shape = FieldShape::Array;
    } else {
      fail(macro.line, fmt::format("syntax error: unknown field macro '{}' (expected __field, __array or __enum)",
                                   macro.text));
    }
    expect_punct("(", fmt::format("after {}", macro.text).c_str());
    f.decl.type = parse_type();
    expect_punct(",", "after the field type");
    f.decl.name = expect_identifier("field name");
    if (f.decl.name.starts_with("common_"))
      fail(f.line, fmt::format("field name '{}' is reserved: stable formats have no common_ fields",
                               f.decl.name));
    if (f.decl.shape == FieldShape::Array) {
      expect_punct(",", "after the array name");
      const Token& cnt = expect_word("an array count");
      unsigned long v = 0;
      if ((v = parse_bounded(cnt.text, kMaxCount)) == 0)
        fail(cnt.line, fmt::format("bad count '{}' for array '{}' (expected 1 to {})", cnt.text,
                                   f.decl.name, kMaxCount));
      f.decl.count = static_cast<unsigned>(v);
    }
    if (macro.text == "__enum") parse_enum_name(ev, f);
    if (at_punct(",") && f.decl.shape == FieldShape::Scalar)
      fail(peek().line, fmt::format("syntax error: __field({}) takes a type and a name; use __array for a count",
                                    f.decl.name));
    expect_punct(")", fmt::format("to close {}", macro.text).c_str());
    for (const auto& other : ev.fields)
      if (other.decl.name == f.decl.name)
        fail(f.line, fmt::format("duplicate field '{}' in event '{}' (first at line {})", f.decl.name,
                                 ev.name, other.line));
    if (!at_punct("="))
      fail(f.line, fmt::format("missing source for field '{}': expected '= <raw field>'", f.decl.name));
    next();
    f.sources.push_back(parse_source(f));
    while (at_punct("|")) {
      next();
      f.sources.push_back(parse_source(f));
    }
    ev.fields.push_back(std::move(f));
  }

  // `, <enum>` of __enum(<type>, <name>, <enum>).
  void parse_enum_name(const StableEvent& ev, StableField& f) {
    expect_punct(",", "after the field name of __enum (expected the enumeration's name)");
    int line = peek().line;
    f.enum_name = expect_identifier("enumeration name");
    if (stable_type(f.enum_name))
      fail(line, fmt::format("enumeration name '{}' is a type name", f.enum_name));
    if (f.decl.type.name == "bool")
      fail(line, fmt::format("enumeration '{}' needs an integer type, not bool", f.enum_name));
    auto same_type = [&](const StableEvent& e) {
      for (const auto& other : e.fields)
        if (other.enum_name == f.enum_name && other.decl.type.name != f.decl.type.name)
          fail(line, fmt::format("enumeration '{}' is over '{}' here and over '{}' in {}.{}", f.enum_name,
                                 f.decl.type.name, other.decl.type.name, e.name, other.decl.name));
    };
    same_type(ev);
    for (const auto& e : existing_.events) same_type(e);
    for (const auto& e : events_) same_type(e);
  }

  FieldSource parse_source(const StableField& f) {
    if (peek().kind != Token::Word)
      fail(peek().line, fmt::format("missing source for field '{}': expected a raw field name, found {}",
                                    f.decl.name, describe(peek())));
    const Token& word = next();
    if (!is_identifier(word.text))
      fail(word.line, fmt::format("syntax error: '{}' is not a valid raw field name", word.text));
    if (!at_punct("(")) return {FieldSource::Kind::Field, word.text};
    if (word.text != "task_state")
      fail(word.line, fmt::format("unknown conversion '{}' (known: task_state)", word.text));
    if (f.decl.shape != FieldShape::Scalar || f.decl.type.bits != 8)
      fail(word.line, fmt::format("task_state() gives one letter: field '{}' must be a scalar char",
                                  f.decl.name));
    next();
    std::string arg = expect_identifier("raw field name inside task_state()");
    expect_punct(")", "to close task_state(");
    return {FieldSource::Kind::TaskState, arg};
  }

  std::vector<Token> toks_;
  std::size_t pos_ = 0;
  const std::string& file_;
  const Catalog& existing_;
  std::vector<StableEvent> events_;
};

}  // namespace

std::string CatalogError::str() const {
  if (line > 0) return fmt::format("{}:{}: {}", file, line, message);
  return fmt::format("{}: {}", file, message);
}

CatalogResult parse_catalog(std::string_view text, const std::string& file, Catalog& into) {
  try {
    Parser p(lex(text), file, into);
    auto events = p.parse();
    for (auto& e : events) into.events.push_back(std::move(e));
    return {};
  } catch (const Failure& f) {
    return CatalogError{file, f.line, f.message};
  }
}

namespace {

// A catalog file's text: a regular file (not a device, FIFO or directory that
// happens to have the name) of at most kMaxCatalogBytes.
Result<std::string, CatalogError> read_catalog_file(const std::string& f) {
  int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return CatalogError{f, 0, fmt::format("cannot read catalog: {}", std::strerror(errno))};
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return CatalogError{f, 0, "cannot read catalog: not a regular file"};
  }
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      return CatalogError{f, 0, fmt::format("cannot read catalog: {}", std::strerror(e))};
    }
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > kMaxCatalogBytes) {
      ::close(fd);
      return CatalogError{f, 0, fmt::format("cannot read catalog: larger than {} bytes", kMaxCatalogBytes)};
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace

CatalogResult load_catalog(const std::string& path, Catalog& into) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_directory(path, ec)) {
    for (const auto& de : fs::directory_iterator(path, ec))
      if (de.path().extension() == ".catalog") files.push_back(de.path().string());
    std::sort(files.begin(), files.end());
    if (files.empty()) return CatalogError{path, 0, "no *.catalog files in this directory"};
  } else {
    files.push_back(path);
  }
  Catalog merged = into;
  for (const auto& f : files) {
    auto text = read_catalog_file(f);
    if (!text) return std::move(text).error();
    if (auto parsed = parse_catalog(*text, f, merged); !parsed) return parsed;
  }
  if (merged.events.empty()) return CatalogError{path, 0, "the catalog declares no events"};
  into = std::move(merged);
  return {};
}

}  // namespace eventfs
