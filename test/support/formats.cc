// The format language and the default catalog, read independently of the daemon.
#include "support/formats.h"

namespace eventfs_it {

const std::regex& format_line_regex() {
  // The language of DESIGN.md, plus the documented dynarray extension.
  static const std::regex re(
      "^\\t(field:(\\S+)\\ttype:([^\\t]+)\\tsize:(\\d+)"
      "|array:(\\S+)\\ttype:([^\\t]+)\\tsize:(\\d+)\\tcount:(\\d+)"
      "|dynarray:(\\S+)\\ttype:([^\\t]+)\\tsize:(\\d+)\\tloc:(data_loc|rel_loc|tail))"
      "\\talign:(\\d+)\\tsigned:([01]);$");
  return re;
}

std::vector<FormatLine> parse_format(const std::string& text, std::vector<std::string>* bad) {
  std::vector<FormatLine> out;
  const std::regex& re = format_line_regex();
  for (const auto& line : split_lines(text)) {
    std::smatch m;
    if (!std::regex_match(line, m, re)) {
      if (bad) bad->push_back(line);
      continue;
    }
    FormatLine f;
    if (m[2].matched) {
      f.kind = "field";
      f.name = m[2];
      f.type = m[3];
      f.bits = std::stoul(m[4]);
    } else if (m[5].matched) {
      f.kind = "array";
      f.name = m[5];
      f.type = m[6];
      f.bits = std::stoul(m[7]);
      f.count = std::stoul(m[8]);
    } else {
      f.kind = "dynarray";
      f.name = m[9];
      f.type = m[10];
      f.bits = std::stoul(m[11]);
      f.loc = m[12];
    }
    f.align = std::stoul(m[13]);
    f.is_signed = m[14] == "1";
    out.push_back(std::move(f));
  }
  if (!text.empty() && text.back() != '\n' && bad) bad->push_back("<no newline at end>");
  return out;
}

NamedType parse_named_type(const std::string& text, std::vector<std::string>* bad) {
  static const std::regex key(R"(^(\w+) = ([^;{]*);$)");
  static const std::regex entry(R"re(^\t\{ (-?\d+), "((?:[^"\\]|\\.)*)" \},$)re");
  static const std::regex field(R"(^\t(\w+\.\w+),$)");
  NamedType t;
  enum { Top, Map, Fields } in = Top;
  std::smatch m;
  for (const auto& line : split_lines(text)) {
    if (in == Top && std::regex_match(line, m, key) && !t.keys.count(m[1])) {
      t.keys[m[1]] = m[2];
    } else if (in == Top && (line == "map = {" || line == "fields = {")) {
      in = line == "map = {" ? Map : Fields;
    } else if (in != Top && line == "};") {
      in = Top;
    } else if (in == Map && std::regex_match(line, m, entry)) {
      t.map.emplace_back(std::stoll(m[1]), m[2]);
    } else if (in == Fields && std::regex_match(line, m, field)) {
      t.fields.push_back(m[1]);
    } else if (bad) {
      bad->push_back(line);
    }
  }
  if (in != Top && bad) bad->push_back("(unterminated list)");
  return t;
}

std::vector<std::pair<long long, std::string>> print_symbolic_table(const std::string& format,
                                                                    const std::string& field) {
  std::vector<std::pair<long long, std::string>> out;
  const std::string head = "__print_symbolic(REC->" + field + ",";
  auto at = format.find(head);
  if (at == std::string::npos) return out;
  auto end = format.find(')', at);
  std::string list = format.substr(at + head.size(), end - at - head.size());
  static const std::regex pair(R"re(\{ *(-?(?:0x[0-9a-fA-F]+|\d+)) *, *"([^"]*)" *\})re");
  for (std::sregex_iterator i(list.begin(), list.end(), pair), e; i != e; ++i)
    out.emplace_back(std::stoll((*i)[1], nullptr, 0), (*i)[2]);
  return out;
}

std::vector<TracefsField> parse_tracefs_format(const std::string& text) {
  std::vector<TracefsField> out;
  static const std::regex re("^\\tfield:(.*);\\toffset:(\\d+);\\tsize:(\\d+);\\tsigned:(\\d+);$");
  bool in_format = false, common = true;
  for (const auto& line : split_lines(text)) {
    if (line == "format:") {
      in_format = true;
      continue;
    }
    if (!in_format) continue;
    if (line.rfind("print fmt:", 0) == 0) break;
    if (line.empty()) {
      common = false;
      continue;
    }
    std::smatch m;
    if (!std::regex_match(line, m, re)) continue;
    TracefsField f;
    f.decl = m[1];
    f.offset = std::stoul(m[2]);
    f.size = std::stoul(m[3]);
    f.is_signed = std::stoi(m[4]);
    f.common = common;
    // The name is the last identifier, after any [..] suffixes are dropped.
    std::string d = f.decl;
    while (!d.empty() && (d.back() == ' ')) d.pop_back();
    while (!d.empty() && d.back() == ']') {
      auto open = d.rfind('[');
      if (open == std::string::npos) break;
      d = d.substr(0, open);
      while (!d.empty() && d.back() == ' ') d.pop_back();
    }
    std::size_t start = d.size();
    while (start > 0 && (std::isalnum(static_cast<unsigned char>(d[start - 1])) || d[start - 1] == '_')) --start;
    f.name = d.substr(start);
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<CatalogEntry> default_catalog() {
  std::string text = slurp(std::string(kSourceDir) + "/src/catalog/default.catalog");
  std::string stripped;
  for (const auto& line : split_lines(text)) {
    auto hash = line.find('#');
    stripped += (hash == std::string::npos ? line : line.substr(0, hash)) + "\n";
  }
  std::vector<CatalogEntry> out;
  static const std::regex re("STABLE_EVENT\\(\\s*(\\w+)\\s*,\\s*([\\w:|\\s]+?)\\s*,\\s*id\\s*=\\s*(\\w+)");
  for (auto it = std::sregex_iterator(stripped.begin(), stripped.end(), re); it != std::sregex_iterator(); ++it) {
    CatalogEntry e;
    e.name = (*it)[1];
    std::string srcs = (*it)[2];
    static const std::regex src_re("(\\w+):(\\w+)");
    for (auto s = std::sregex_iterator(srcs.begin(), srcs.end(), src_re); s != std::sregex_iterator(); ++s)
      e.sources.push_back((*s)[1].str() + "/" + (*s)[2].str());
    e.id = static_cast<unsigned>(std::stoul((*it)[3], nullptr, 0));
    out.push_back(std::move(e));
  }
  return out;
}

std::set<std::string> expected_available(const std::vector<CatalogEntry>& cat, const std::string& tracefs_root) {
  std::set<std::string> out;
  for (const auto& e : cat)
    for (const auto& src : e.sources)
      if (exists(tracefs_root + "/events/" + src + "/format")) {
        out.insert(e.name);
        break;
      }
  return out;
}

}  // namespace eventfs_it
