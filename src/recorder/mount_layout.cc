#include "recorder/mount_layout.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "base/text.h"
#include "eventfs/record.h"
#include "tracefs/file_io.h"

namespace eventfs::recorder {
namespace {

// A parser's failure: thrown inside parse_format() and parse_named_type()
// only, and caught by them.
struct Fail {
  std::string reason;
};

// A decimal of at most 9 digits.
std::optional<unsigned> to_number(const std::string& v) {
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 9) return std::nullopt;
  return static_cast<unsigned>(std::stoul(v));
}

std::string not_a_number(const std::string& what, const std::string& v) {
  return fmt::format("{}: '{}' is not a number", what, v);
}

unsigned to_unsigned(const std::string& v, const std::string& what) {
  auto n = to_number(v);
  if (!n) throw Fail{not_a_number(what, v)};
  return *n;
}

unsigned round_up(unsigned n, unsigned a) { return (n + a - 1) / a * a; }

bool is_power_of_two(unsigned a) { return a != 0 && (a & (a - 1)) == 0; }

bool is_integer_size(unsigned bits) { return bits == 8 || bits == 16 || bits == 32 || bits == 64; }

// One line of the format language ("\tkey:value\t...", its ';' taken off) as
// a field whose offset is not set yet.
Field parse_format_line(const std::string& line, const std::string& where) {
  Field f;
  bool array = false, have_size = false, have_align = false, have_signed = false;
  std::size_t pos = 1;
  while (pos <= line.size()) {
    std::size_t tab = line.find('\t', pos);
    std::string item = line.substr(pos, tab == std::string::npos ? std::string::npos : tab - pos);
    pos = tab == std::string::npos ? line.size() + 1 : tab + 1;
    std::size_t colon = item.find(':');
    if (colon == std::string::npos) throw Fail{where + ": '" + item + "' is not key:value"};
    std::string key = item.substr(0, colon), value = item.substr(colon + 1);
    if (key == "field" || key == "array") {
      array = key == "array";
      f.name = value;
    } else if (key == "type") {
      f.type = value;
    } else if (key == "size") {
      f.bits = to_unsigned(value, where);
      have_size = true;
    } else if (key == "count") {
      f.count = to_unsigned(value, where);
    } else if (key == "align") {
      f.align = to_unsigned(value, where);
      have_align = true;
    } else if (key == "signed") {
      if (value != "0" && value != "1") throw Fail{where + ": signed is 0 or 1"};
      f.is_signed = value == "1";
      have_signed = true;
    } else {
      throw Fail{where + ": unknown key '" + key + "'"};
    }
  }
  if (f.name.empty() || f.type.empty() || !have_size || !have_align || !have_signed)
    throw Fail{where + ": a field needs a name, type, size, align and signed"};
  if (array != (f.count > 0)) throw Fail{where + ": an array (and only an array) has a count"};
  if (!is_integer_size(f.bits) || !is_power_of_two(f.align) || f.align > 8)
    throw Fail{where + ": unsupported size or align"};
  return f;
}

std::vector<Field> lay_out_format(const std::string& text, const std::string& what, unsigned* size, unsigned* end,
                                  unsigned* align) {
  std::vector<Field> out;
  std::istringstream in(text);
  std::string line;
  unsigned offset = 0, max_align = 1, lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = fmt::format("{}:{}", what, lineno);
    if (line.empty() || line[0] != '\t') throw Fail{where + ": not a line of the format language"};
    if (line.back() != ';') throw Fail{where + ": a format line ends with ';'"};
    line.pop_back();
    Field f = parse_format_line(line, where);
    offset = round_up(offset, f.align);
    f.offset = offset;
    offset += f.bits / 8 * std::max(f.count, 1u);
    max_align = std::max(max_align, f.align);
    out.push_back(std::move(f));
  }
  if (size) *size = round_up(offset, max_align);
  if (end) *end = offset;
  if (align) *align = max_align;
  return out;
}

// Where the '}' that closes the '{' at `open` is (quoted braces do not
// count), or npos.
std::size_t matching_brace(const std::string& text, std::size_t open) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = open; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return i;
    }
  }
  return std::string::npos;
}

// The next "key = value;" statement of a types/ file from `pos`, which it
// moves past the ';'. A value in braces ("map = { ... };") keeps them.
// False at the end of the text.
bool next_statement(const std::string& text, std::size_t& pos, const std::string& what, std::string& key,
                    std::string& value) {
  std::size_t eq = text.find('=', pos);
  if (eq == std::string::npos) {
    if (!trimmed(text.substr(pos)).empty()) throw Fail{what + ": trailing text"};
    return false;
  }
  key = trimmed(text.substr(pos, eq - pos));
  const std::size_t after = text.find_first_not_of(" \t\n", eq + 1);
  const bool braced = after != std::string::npos && text[after] == '{';
  const std::size_t close = braced ? matching_brace(text, after) : eq;
  if (close == std::string::npos) throw Fail{what + ": unbalanced braces in " + key};
  const std::size_t semi = text.find(';', close);
  if (semi == std::string::npos) throw Fail{what + ": ';' missing after " + key};
  value = braced ? text.substr(after, close + 1 - after) : trimmed(text.substr(eq + 1, semi - eq - 1));
  pos = semi + 1;
  return true;
}

// map = { { VALUE, "NAME" }, ... }: the enum's values and names.
void parse_map(const std::string& value, const std::string& what, NamedType& t) {
  std::size_t i = 1;
  while (true) {
    std::size_t open = value.find('{', i);
    if (open == std::string::npos) break;
    std::size_t comma = value.find(',', open);
    std::size_t q1 = value.find('"', comma == std::string::npos ? open : comma);
    if (comma == std::string::npos || q1 == std::string::npos) throw Fail{what + ": bad map entry"};
    std::string num = trimmed(value.substr(open + 1, comma - open - 1));
    std::string label;
    std::size_t j = q1 + 1;
    for (; j < value.size() && value[j] != '"'; ++j) {
      if (value[j] == '\\' && j + 1 < value.size()) ++j;
      label += value[j];
    }
    std::size_t close = value.find('}', j);
    if (j >= value.size() || close == std::string::npos) throw Fail{what + ": bad map entry"};
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(num.c_str(), &end, 0);
    if (num.empty() || *end != '\0' || errno != 0) throw Fail{what + ": bad map value '" + num + "'"};
    t.map.emplace_back(v, label);
    i = close + 1;
  }
}

// fields = { event.field, ... }: the fields bound to the enum.
void parse_bound_fields(const std::string& value, NamedType& t) {
  std::istringstream in(value.size() >= 2 ? value.substr(1, value.size() - 2) : std::string());
  std::string item;
  while (std::getline(in, item, ',')) {
    item = trimmed(item);
    if (!item.empty()) t.fields.push_back(item);
  }
}

// One statement of a types/ file into `t`; keys for other readers are left.
void apply_statement(const std::string& key, const std::string& value, const std::string& what, NamedType& t,
                     bool& have_parent) {
  if (key == "parent") {
    if (value != "integer" && value != "enum") throw Fail{what + ": unknown parent '" + value + "'"};
    t.is_enum = value == "enum";
    have_parent = true;
  } else if (key == "size") {
    t.bits = to_unsigned(value, what);
  } else if (key == "align") {
    t.align = to_unsigned(value, what);
  } else if (key == "signed") {
    if (value != "true" && value != "false") throw Fail{what + ": signed is true or false"};
    t.is_signed = value == "true";
  } else if (key == "map") {
    parse_map(value, what, t);
  } else if (key == "fields") {
    parse_bound_fields(value, t);
  }
}

NamedType named_type(const std::string& name, const std::string& text, const std::string& what) {
  NamedType t;
  t.name = name;
  std::size_t pos = 0;
  bool have_parent = false;
  std::string key, value;
  while (next_statement(text, pos, what, key, value)) apply_statement(key, value, what, t, have_parent);
  if (!have_parent) throw Fail{what + ": no parent"};
  if (!is_integer_size(t.bits) || !is_power_of_two(t.align)) throw Fail{what + ": unsupported size or align"};
  return t;
}

}  // namespace

Result<std::vector<Field>> parse_format(const std::string& text, const std::string& what, unsigned* size,
                                        unsigned* end, unsigned* align) {
  try {
    return lay_out_format(text, what, size, end, align);
  } catch (const Fail& f) {
    return fail(EINVAL, f.reason);
  }
}

Result<NamedType> parse_named_type(const std::string& name, const std::string& text, const std::string& what) {
  try {
    return named_type(name, text, what);
  } catch (const Fail& f) {
    return fail(EINVAL, f.reason);
  }
}

Result<std::uint32_t> parse_event_id(const std::string& text, const std::string& what) {
  const std::string id = trimmed(text);
  std::uint32_t v = 0;
  auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), v);
  // Decimal digits only: from_chars would also take a leading '-'.
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos || ec != std::errc() ||
      end != id.data() + id.size())
    return fail(EINVAL, fmt::format("{}: '{}' is not an event id (a decimal from 1 to {})", what, id, UINT32_MAX));
  if (v == EVENTFS_ID_LOST) return fail(EINVAL, what + ": id 0 is the lost-events record's");
  return v;
}

std::string selected_clock(const std::string& text) {
  std::size_t open = text.find('['), close = text.find(']');
  if (open != std::string::npos && close != std::string::npos && close > open + 1)
    return text.substr(open + 1, close - open - 1);
  return trimmed(text);
}

const NamedType* MountLayout::enum_of(const std::string& event, const std::string& field) const {
  const std::string key = event + "." + field;
  for (const auto& [name, t] : types)
    if (t.is_enum && std::find(t.fields.begin(), t.fields.end(), key) != t.fields.end()) return &t;
  return nullptr;
}

namespace {

Result<std::string> read_text(const std::string& path) {
  auto s = read_whole_file(path);
  if (!s) return fail(s.code(), fmt::format("cannot read {}: {}", path, std::strerror(s.code())));
  return s;
}

Status check_directory(const std::string& mount) {
  struct stat st {};
  if (::stat(mount.c_str(), &st) != 0) {
    int e = errno;
    return fail(e, fmt::format("{}: {}", mount, std::strerror(e)));
  }
  if (!S_ISDIR(st.st_mode)) return fail(ENOTDIR, fmt::format("{} is not a directory", mount));
  return {};
}

// <mount>/header's two sections, the record header's and the lost record's.
struct HeaderText {
  std::string header, lost;
};

Result<HeaderText> read_header(const std::string& mount) {
  const std::string path = mount + "/header";
  auto read = read_whole_file(path);
  if (!read && read.code() == ENOENT)
    return fail(ENOENT, fmt::format("{} is not an eventfs mount (it has no 'header' file)", mount));
  if (!read) return fail(read.code(), fmt::format("cannot read {}: {}", path, std::strerror(read.code())));
  HeaderText out;
  std::string section, line;
  std::istringstream in(*read);
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line == "header:" || line == "lost:") section = line;
    else if (section == "header:") out.header += line + "\n";
    else if (section == "lost:") out.lost += line + "\n";
    else return fail(EINVAL, path + ": a field before 'header:'");
  }
  return out;
}

bool has_field(const std::vector<Field>& fs, const char* name, unsigned offset, unsigned bits) {
  for (const auto& f : fs)
    if (f.name == name) return f.offset == offset && f.bits == bits && f.count == 0;
  return false;
}

// The framing this program writes out is record.h's: <mount>/header must
// describe the same one.
Status check_header(const std::string& mount, MountLayout& l) {
  const std::string path = mount + "/header";
  auto text = read_header(mount);
  if (!text) return std::move(text).error();
  unsigned hsize = 0, lsize = 0;
  auto header = parse_format(text->header, path + " (header)", &hsize);
  if (!header) return std::move(header).error();
  auto lost = parse_format(text->lost, path + " (lost)", &lsize);
  if (!lost) return std::move(lost).error();
  l.header_fields = std::move(header).value();
  const auto& h = l.header_fields;
  bool ok = hsize == sizeof(eventfs_record_header) && lsize == sizeof(eventfs_lost) &&
            has_field(h, "size", offsetof(eventfs_record_header, size), 32) &&
            has_field(h, "id", offsetof(eventfs_record_header, id), 32) &&
            has_field(h, "timestamp", offsetof(eventfs_record_header, timestamp), 64) &&
            has_field(h, "pid", offsetof(eventfs_record_header, pid), 32) &&
            has_field(h, "version", offsetof(eventfs_record_header, version), 16) &&
            has_field(*lost, "count", offsetof(eventfs_lost, count), 64) &&
            has_field(*lost, "cpu", offsetof(eventfs_lost, cpu), 32);
  if (!ok)
    return fail(EINVAL, fmt::format("{} describes a record framing eventfs-record does not read (it reads version {})",
                                    path, EVENTFS_RECORD_VERSION));
  return {};
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

Status read_available(const std::string& mount, MountLayout& l) {
  auto avail = read_whole_file(mount + "/available_events");
  if (!avail)
    return fail(avail.code(), fmt::format("{} is not an eventfs mount (no readable available_events: {})", mount,
                                          std::strerror(avail.code())));
  std::istringstream in(*avail);
  std::string line;
  while (std::getline(in, line))
    if (!(line = trimmed(line)).empty()) l.available.push_back(line);
  return {};
}

// Which available events the patterns choose; each must match one.
Result<std::vector<bool>> choose(const MountLayout& l, const std::vector<std::string>& patterns) {
  std::vector<bool> chosen(l.available.size(), false);
  for (const auto& p : patterns) {
    bool any = false;
    for (std::size_t i = 0; i < l.available.size(); ++i)
      if (::fnmatch(p.c_str(), l.available[i].c_str(), 0) == 0) chosen[i] = any = true;
    if (!any) {
      bool glob = p.find_first_of("*?[") != std::string::npos;
      return fail(ENOENT,
                  fmt::format("{} '{}' in {}/available_events", glob ? "no event matches" : "no event", p, l.mount));
    }
  }
  return chosen;
}

Status read_types(const std::string& mount, MountLayout& l) {
  for (const auto& n : list_dir(mount + "/types")) {
    const std::string path = mount + "/types/" + n;
    auto text = read_text(path);
    if (!text) return std::move(text).error();
    auto type = parse_named_type(n, *text, path);
    if (!type) return std::move(type).error();
    l.types.emplace(n, std::move(type).value());
  }
  return {};
}

// A named type must agree with the fields that use it.
Status check_types_of(const MountLayout& l, const Event& e, const std::string& dir) {
  for (const auto& f : e.fields) {
    auto t = l.types.find(f.type);
    if (t != l.types.end() && !t->second.is_enum &&
        (t->second.bits != f.bits || t->second.align != f.align || t->second.is_signed != f.is_signed))
      return fail(EINVAL, fmt::format("{}/types/{} disagrees with {}/format's field {}", l.mount, f.type, dir, f.name));
    if (const NamedType* en = l.enum_of(e.name, f.name); en && (en->bits != f.bits || f.count != 0))
      return fail(EINVAL, fmt::format("{}/types/{} binds {}.{}, whose format size differs", l.mount, en->name,
                                      e.name, f.name));
  }
  return {};
}

Result<Event> read_event(const MountLayout& l, const std::string& name) {
  Event e;
  e.name = name;
  const std::string dir = l.mount + "/" + e.name;
  auto format = read_text(dir + "/format");
  if (!format) return std::move(format).error();
  auto fields = parse_format(*format, dir + "/format", &e.size, &e.end, &e.align);
  if (!fields) return std::move(fields).error();
  e.fields = std::move(fields).value();
  auto id_text = read_text(dir + "/id");
  if (!id_text) return std::move(id_text).error();
  auto id = parse_event_id(*id_text, dir + "/id");
  if (!id) return std::move(id).error();
  e.id = *id;
  if (Status s = check_types_of(l, e, dir); !s) return std::move(s).error();
  return e;
}

Status read_events(MountLayout& l, const std::vector<std::string>& patterns) {
  auto chosen = choose(l, patterns);
  if (!chosen) return std::move(chosen).error();
  if (Status s = read_types(l.mount, l); !s) return s;
  for (std::size_t i = 0; i < l.available.size(); ++i) {
    if (!(*chosen)[i]) continue;
    auto e = read_event(l, l.available[i]);
    if (!e) return std::move(e).error();
    l.events.push_back(std::move(e).value());
  }
  return {};
}

// The CPUs of per_cpu/cpuN.
Status read_cpus(const std::string& mount, MountLayout& l) {
  for (const auto& n : list_dir(mount + "/per_cpu")) {
    if (n.rfind("cpu", 0) != 0 || n.size() == 3 || n.find_first_not_of("0123456789", 3) != std::string::npos)
      continue;
    int cpu = 0;
    auto [end, ec] = std::from_chars(n.data() + 3, n.data() + n.size(), cpu);
    if (ec != std::errc() || end != n.data() + n.size())
      return fail(EINVAL, fmt::format("{}/per_cpu/{}: not a CPU number", mount, n));
    l.cpus.push_back(cpu);
  }
  std::sort(l.cpus.begin(), l.cpus.end());
  if (l.cpus.empty()) return fail(ENOENT, fmt::format("{} is not an eventfs mount (no per_cpu/cpuN streams)", mount));
  return {};
}

}  // namespace

Result<MountLayout> read_mount(const std::string& mount, const std::vector<std::string>& patterns) {
  MountLayout l;
  l.mount = mount;
  if (Status s = check_directory(mount); !s) return std::move(s).error();
  if (Status s = check_header(mount, l); !s) return std::move(s).error();
  if (Status s = read_available(mount, l); !s) return std::move(s).error();
  if (Status s = read_events(l, patterns); !s) return std::move(s).error();
  if (auto clock = read_whole_file(mount + "/trace_clock"); clock && !selected_clock(*clock).empty())
    l.clock = selected_clock(*clock);
  auto clock_decl = declare_clock(l.clock, ::sysconf(_SC_CLK_TCK), mount);
  if (!clock_decl) return std::move(clock_decl).error();
  l.clock_decl = *clock_decl;
  if (Status s = read_cpus(mount, l); !s) return std::move(s).error();
  return l;
}

}  // namespace eventfs::recorder
