#include "control/filter.h"

#include <cctype>
#include <cstring>

#include <fmt/format.h>

namespace eventfs {
namespace {

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

bool kernel_field(const std::string& name) {
  return name.rfind("common_", 0) == 0 || name == "CPU" || name == "COMM" || name == "cpu" ||
         name == "comm";
}

struct Fail {
  std::string message;
  std::size_t pos;
};

class FilterParser {
 public:
  FilterParser(std::string_view text, const FilterFieldMap* fields, const VariableValues* vars)
      : s_(text), fields_(fields), vars_(vars) {}

  TranslatedFilter run() {
    skip();
    if (i_ == s_.size()) throw Fail{"Meaningless filter expression", 0};
    parse_or();
    skip();
    if (i_ != s_.size()) {
      if (s_[i_] == ')') throw Fail{"Unbalanced parens", i_};
      throw Fail{"Invalid operator", i_};
    }
    out_.raw += s_.substr(copied_);
    if (out_.unset_variable) {
      out_.raw = kNeverFilter;
      out_.spans.clear();
    }
    return std::move(out_);
  }

 private:
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool at(const char* tok) {
    skip();
    return s_.compare(i_, std::strlen(tok), tok) == 0;
  }

  void parse_or() {
    parse_and();
    while (at("||")) {
      i_ += 2;
      parse_and();
    }
  }
  void parse_and() {
    parse_unary();
    while (at("&&")) {
      i_ += 2;
      parse_unary();
    }
  }
  // Each '(' and '!' is a level of recursion: bounded, so that no input can
  // take the stack.
  static constexpr int kMaxDepth = 256;
  struct Deeper {
    Deeper(int& depth, std::size_t pos) : depth_(depth) {
      if (++depth_ > kMaxDepth) throw Fail{"Too deeply nested (the limit is 256 levels of '(' and '!')", pos};
    }
    ~Deeper() { --depth_; }
    int& depth_;
  };
  void parse_unary() {
    skip();
    if (i_ == s_.size()) throw Fail{"Missing field name and/or value", i_};
    if (s_[i_] == '!' && !at("!=")) {
      Deeper level(depth_, i_);
      ++i_;
      parse_unary();
      return;
    }
    if (s_[i_] == '(') {
      Deeper level(depth_, i_);
      std::size_t open = i_++;
      parse_or();
      if (!at(")")) throw Fail{"Unbalanced parens", open};
      ++i_;
      return;
    }
    parse_predicate();
  }
  int depth_ = 0;

  std::string read_op(std::size_t& pos) {
    skip();
    pos = i_;
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">", "~", "&"}) {
      std::size_t n = std::strlen(op);
      if (s_.compare(i_, n, op) == 0 && !(n == 1 && op[0] == '&' && s_.compare(i_, 2, "&&") == 0)) {
        i_ += n;
        return op;
      }
    }
    throw Fail{"Invalid operator", i_};
  }

  // A value: a quoted string, or a run of characters up to a blank, a
  // parenthesis or a logical operator.
  std::string read_value(std::size_t& pos, bool& quoted) {
    skip();
    pos = i_;
    quoted = i_ < s_.size() && (s_[i_] == '"' || s_[i_] == '\'');
    if (quoted) {
      char q = s_[i_];
      std::size_t end = s_.find(q, i_ + 1);
      if (end == std::string_view::npos) throw Fail{"Missing closing quote", i_};
      i_ = end + 1;
      return std::string(s_.substr(pos + 1, end - pos - 1));
    }
    while (i_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[i_])) && s_[i_] != '(' &&
           s_[i_] != ')' && !(s_.compare(i_, 2, "&&") == 0) && !(s_.compare(i_, 2, "||") == 0))
      ++i_;
    if (i_ == pos) throw Fail{"Missing field name and/or value", pos};
    return std::string(s_.substr(pos, i_ - pos));
  }

  void replace(std::size_t pos, std::size_t len, const std::string& with) {
    out_.raw += s_.substr(copied_, pos - copied_);
    out_.spans.push_back({pos, len, out_.raw.size(), with.size()});
    out_.raw += with;
    copied_ = pos + len;
  }

  void parse_predicate() {
    skip();
    std::size_t fpos = i_;
    if (i_ >= s_.size() || !is_ident_start(s_[i_])) throw Fail{"Missing field name and/or value", i_};
    while (i_ < s_.size() && is_ident_char(s_[i_])) ++i_;
    std::string name(s_.substr(fpos, i_ - fpos));
    std::size_t op_pos, vpos;
    std::string op = read_op(op_pos);
    bool quoted;
    std::string value = read_value(vpos, quoted);
    std::size_t end = i_;
    const FilterField* f = nullptr;
    if (fields_) {
      auto it = fields_->find(name);
      if (it != fields_->end())
        f = &it->second;
      else if (!kernel_field(name))
        throw Fail{"Field not found", fpos};
    }
    if (!f || !f->task_state) {
      if (f && f->raw_name != name) replace(fpos, name.size(), f->raw_name);
      if (!quoted) substitute_variable(value, vpos);
      return;
    }
    if (op != "==" && op != "!=")
      throw Fail{fmt::format("Illegal operation for field type: {} is a task state letter; use == or !=", name),
                 op_pos};
    replace(fpos, end - fpos, task_state_predicate(*f, op == "==", value, vpos));
  }

  void substitute_variable(const std::string& word, std::size_t pos) {
    if (!vars_) return;
    auto v = vars_->find(word);
    if (v == vars_->end()) return;
    out_.variables.insert(word);
    if (!v->second) {
      out_.unset_variable = true;
      return;
    }
    replace(pos, word.size(), std::to_string(*v->second));
  }

  std::string task_state_predicate(const FilterField& f, bool equal, const std::string& letter, std::size_t vpos) {
    std::uint64_t all = 0, lower = 0, bit = 0;
    bool found = false;
    for (const auto& [value, name] : f.states) {
      if (!found && name == letter) {
        bit = value;
        lower = all;
        found = true;
      }
      all |= value;
    }
    std::string expr;
    if (letter == "R") {
      expr = fmt::format("({} & {})", f.raw_name, all);
      equal = !equal;  // R: no state bit is set
    } else if (!found) {
      std::string known = "R";
      for (const auto& [value, name] : f.states) known += " " + name;
      throw Fail{fmt::format("Invalid task state '{}' (this kernel has: {})", letter, known), vpos};
    } else if (lower == 0) {
      expr = fmt::format("({} & {})", f.raw_name, bit);
    } else {
      expr = fmt::format("({} & {} && !({} & {}))", f.raw_name, bit, f.raw_name, lower);
    }
    return equal ? expr : "!" + expr;
  }

  std::string_view s_;
  const FilterFieldMap* fields_;
  const VariableValues* vars_;
  std::size_t i_ = 0;
  std::size_t copied_ = 0;
  TranslatedFilter out_;
};

}  // namespace

std::size_t TranslatedFilter::stable_pos_of(std::size_t raw_pos) const {
  long shift = 0;
  for (const auto& s : spans) {
    if (raw_pos < s.raw_pos) break;
    if (raw_pos < s.raw_pos + s.raw_len) return s.stable_pos;
    shift = static_cast<long>(s.stable_pos + s.stable_len) - static_cast<long>(s.raw_pos + s.raw_len);
  }
  long p = static_cast<long>(raw_pos) + shift;
  return p < 0 ? 0 : static_cast<std::size_t>(p);
}

FilterResult translate_filter(std::string_view stable, const FilterFieldMap& fields) {
  return translate_filter(stable, &fields, nullptr);
}

namespace {

// A bare word of `text` outside quotes that names one of `vars`: the
// estimate for text the filter grammar does not accept.
bool mentions_a_variable(std::string_view text, const VariableValues& vars) {
  char quote = 0;
  for (std::size_t i = 0; i < text.size();) {
    char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
      ++i;
    } else if (c == '"' || c == '\'') {
      quote = c;
      ++i;
    } else if (is_ident_char(c)) {  // a word, or a number (0x1f is no word)
      std::size_t j = i;
      while (j < text.size() && is_ident_char(text[j])) ++j;
      if (is_ident_start(c) && vars.count(std::string(text.substr(i, j - i)))) return true;
      i = j;
    } else {
      ++i;
    }
  }
  return false;
}

}  // namespace

bool names_a_variable(std::string_view text, const VariableValues& vars) {
  if (vars.empty()) return false;
  // Where the grammar accepts the text, its own reading of which words are
  // values decides: a quote inside an unquoted value opens no string.
  if (auto read = translate_filter(text, nullptr, &vars)) return !read->variables.empty();
  return mentions_a_variable(text, vars);
}

FilterResult translate_filter(std::string_view text, const FilterFieldMap* fields, const VariableValues* vars) {
  try {
    return FilterParser(text, fields, vars).run();
  } catch (const Fail& f) {
    return FilterError{f.message, f.pos};
  }
}

std::string rename_filter_fields(std::string_view raw, const std::map<std::string, std::string>& raw_to_stable) {
  std::string out;
  std::size_t i = 0;
  char quote = 0;
  while (i < raw.size()) {
    char c = raw[i];
    if (quote) {
      out += c;
      if (c == quote) quote = 0;
      ++i;
    } else if (c == '"' || c == '\'') {
      quote = c;
      out += c;
      ++i;
    } else if (is_ident_start(c) && (i == 0 || !is_ident_char(raw[i - 1]))) {
      std::size_t j = i;
      while (j < raw.size() && is_ident_char(raw[j])) ++j;
      std::string word(raw.substr(i, j - i));
      // Only a word followed by an operator is a field name.
      std::size_t k = j;
      while (k < raw.size() && raw[k] == ' ') ++k;
      bool is_field = k < raw.size() && std::strchr("=!<>&~", raw[k]) && raw.compare(k, 2, "&&") != 0;
      auto it = raw_to_stable.find(word);
      out += (is_field && it != raw_to_stable.end()) ? it->second : word;
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

}  // namespace eventfs
