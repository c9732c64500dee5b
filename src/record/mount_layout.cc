#include "record/mount_layout.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "eventfs/record.h"
#include "tracefs/file_io.h"

namespace eventfs::record {
namespace {

std::runtime_error error(const std::string& msg) { return std::runtime_error(msg); }

std::string must_read(const std::string& path) {
  auto s = read_whole_file(path);
  if (!s) throw error(fmt::format("cannot read {}: {}", path, std::strerror(s.code())));
  return std::move(s).value();
}

std::string trim(std::string s) {
  auto sp = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && sp(s.back())) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && sp(s[i])) ++i;
  return s.substr(i);
}

unsigned to_unsigned(const std::string& v, const std::string& what) {
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 9)
    throw error(fmt::format("{}: '{}' is not a number", what, v));
  return static_cast<unsigned>(std::stoul(v));
}

unsigned round_up(unsigned n, unsigned a) { return (n + a - 1) / a * a; }

bool is_power_of_two(unsigned a) { return a != 0 && (a & (a - 1)) == 0; }

}  // namespace

std::vector<Field> parse_format(const std::string& text, const std::string& what, unsigned* size, unsigned* end) {
  std::vector<Field> out;
  std::istringstream in(text);
  std::string line;
  unsigned offset = 0, max_align = 1, lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = fmt::format("{}:{}", what, lineno);
    if (line.empty() || line[0] != '\t') throw error(where + ": not a line of the format language");
    if (line.back() != ';') throw error(where + ": a format line ends with ';'");
    line.pop_back();
    Field f;
    bool array = false, have_size = false, have_align = false, have_signed = false;
    std::size_t pos = 1;
    while (pos <= line.size()) {
      std::size_t tab = line.find('\t', pos);
      std::string item = line.substr(pos, tab == std::string::npos ? std::string::npos : tab - pos);
      pos = tab == std::string::npos ? line.size() + 1 : tab + 1;
      std::size_t colon = item.find(':');
      if (colon == std::string::npos) throw error(where + ": '" + item + "' is not key:value");
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
        if (value != "0" && value != "1") throw error(where + ": signed is 0 or 1");
        f.is_signed = value == "1";
        have_signed = true;
      } else {
        throw error(where + ": unknown key '" + key + "'");
      }
    }
    if (f.name.empty() || f.type.empty() || !have_size || !have_align || !have_signed)
      throw error(where + ": a field needs a name, type, size, align and signed");
    if (array != (f.count > 0)) throw error(where + ": an array (and only an array) has a count");
    if ((f.bits != 8 && f.bits != 16 && f.bits != 32 && f.bits != 64) || !is_power_of_two(f.align) || f.align > 8)
      throw error(where + ": unsupported size or align");
    offset = round_up(offset, f.align);
    f.offset = offset;
    offset += f.bits / 8 * std::max(f.count, 1u);
    max_align = std::max(max_align, f.align);
    out.push_back(std::move(f));
  }
  if (size) *size = round_up(offset, max_align);
  if (end) *end = offset;
  return out;
}

NamedType parse_named_type(const std::string& name, const std::string& text, const std::string& what) {
  NamedType t;
  t.name = name;
  // Statements end with ';'; map = { ... }; and fields = { ... }; hold braces.
  std::size_t pos = 0;
  bool have_parent = false;
  while (true) {
    std::size_t eq = text.find('=', pos);
    if (eq == std::string::npos) {
      if (!trim(text.substr(pos)).empty()) throw error(what + ": trailing text");
      break;
    }
    std::string key = trim(text.substr(pos, eq - pos));
    std::string value;
    std::size_t after = text.find_first_not_of(" \t\n", eq + 1);
    if (after != std::string::npos && text[after] == '{') {
      // Up to the matching '}', then ';'.
      int depth = 0;
      std::size_t i = after;
      bool in_string = false;
      for (; i < text.size(); ++i) {
        char c = text[i];
        if (in_string) {
          if (c == '\\') ++i;
          else if (c == '"') in_string = false;
        } else if (c == '"') {
          in_string = true;
        } else if (c == '{') {
          ++depth;
        } else if (c == '}' && --depth == 0) {
          break;
        }
      }
      if (i >= text.size()) throw error(what + ": unbalanced braces in " + key);
      value = text.substr(after, i + 1 - after);
      std::size_t semi = text.find(';', i);
      if (semi == std::string::npos) throw error(what + ": ';' missing after " + key);
      pos = semi + 1;
    } else {
      std::size_t semi = text.find(';', eq);
      if (semi == std::string::npos) throw error(what + ": ';' missing after " + key);
      value = trim(text.substr(eq + 1, semi - eq - 1));
      pos = semi + 1;
    }
    if (key == "parent") {
      if (value != "integer" && value != "enum") throw error(what + ": unknown parent '" + value + "'");
      t.is_enum = value == "enum";
      have_parent = true;
    } else if (key == "size") {
      t.bits = to_unsigned(value, what);
    } else if (key == "align") {
      t.align = to_unsigned(value, what);
    } else if (key == "signed") {
      if (value != "true" && value != "false") throw error(what + ": signed is true or false");
      t.is_signed = value == "true";
    } else if (key == "map") {
      // { { VALUE, "NAME" }, ... }
      std::size_t i = 1;
      while (true) {
        std::size_t open = value.find('{', i);
        if (open == std::string::npos) break;
        std::size_t comma = value.find(',', open);
        std::size_t q1 = value.find('"', comma == std::string::npos ? open : comma);
        if (comma == std::string::npos || q1 == std::string::npos) throw error(what + ": bad map entry");
        std::string num = trim(value.substr(open + 1, comma - open - 1));
        std::string label;
        std::size_t j = q1 + 1;
        for (; j < value.size() && value[j] != '"'; ++j) {
          if (value[j] == '\\' && j + 1 < value.size()) ++j;
          label += value[j];
        }
        std::size_t close = value.find('}', j);
        if (j >= value.size() || close == std::string::npos) throw error(what + ": bad map entry");
        errno = 0;
        char* end = nullptr;
        long long v = std::strtoll(num.c_str(), &end, 0);
        if (num.empty() || *end != '\0' || errno != 0) throw error(what + ": bad map value '" + num + "'");
        t.map.emplace_back(v, label);
        i = close + 1;
      }
    } else if (key == "fields") {
      std::string inner = value.substr(1, value.size() - 2);
      std::istringstream in(inner);
      std::string item;
      while (std::getline(in, item, ',')) {
        item = trim(item);
        if (!item.empty()) t.fields.push_back(item);
      }
    }
    // Other keys are for other readers.
  }
  if (!have_parent) throw error(what + ": no parent");
  if ((t.bits != 8 && t.bits != 16 && t.bits != 32 && t.bits != 64) || !is_power_of_two(t.align))
    throw error(what + ": unsupported size or align");
  return t;
}

std::string selected_clock(const std::string& text) {
  std::size_t open = text.find('['), close = text.find(']');
  if (open != std::string::npos && close != std::string::npos && close > open + 1)
    return text.substr(open + 1, close - open - 1);
  return trim(text);
}

const NamedType* MountLayout::enum_of(const std::string& event, const std::string& field) const {
  const std::string key = event + "." + field;
  for (const auto& [name, t] : types)
    if (t.is_enum && std::find(t.fields.begin(), t.fields.end(), key) != t.fields.end()) return &t;
  return nullptr;
}

namespace {

// The framing this program writes out is record.h's: <mount>/header must
// describe the same one.
void check_header(const std::string& mount, MountLayout& l) {
  const std::string path = mount + "/header";
  auto read = read_whole_file(path);
  if (!read) {
    if (read.code() == ENOENT)
      throw error(fmt::format("{} is not an eventfs mount (it has no 'header' file)", mount));
    throw error(fmt::format("cannot read {}: {}", path, std::strerror(read.code())));
  }
  const std::string& text = *read;
  std::string section, header_text, lost_text;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line == "header:" || line == "lost:") {
      section = line;
      continue;
    }
    if (section == "header:") header_text += line + "\n";
    else if (section == "lost:") lost_text += line + "\n";
    else throw error(path + ": a field before 'header:'");
  }
  unsigned hsize = 0, lsize = 0;
  l.header_fields = parse_format(header_text, path + " (header)", &hsize);
  auto lost = parse_format(lost_text, path + " (lost)", &lsize);
  auto at = [](const std::vector<Field>& fs, const char* name, unsigned offset, unsigned bits) {
    for (const auto& f : fs)
      if (f.name == name) return f.offset == offset && f.bits == bits && f.count == 0;
    return false;
  };
  bool ok = hsize == sizeof(eventfs_record_header) && lsize == sizeof(eventfs_lost) &&
            at(l.header_fields, "size", offsetof(eventfs_record_header, size), 32) &&
            at(l.header_fields, "id", offsetof(eventfs_record_header, id), 32) &&
            at(l.header_fields, "timestamp", offsetof(eventfs_record_header, timestamp), 64) &&
            at(l.header_fields, "pid", offsetof(eventfs_record_header, pid), 32) &&
            at(l.header_fields, "version", offsetof(eventfs_record_header, version), 16) &&
            at(lost, "count", offsetof(eventfs_lost, count), 64) && at(lost, "cpu", offsetof(eventfs_lost, cpu), 32);
  if (!ok)
    throw error(fmt::format("{} describes a record framing eventfs-record does not read (it reads version {})", path,
                            EVENTFS_RECORD_VERSION));
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

}  // namespace

MountLayout read_mount(const std::string& mount, const std::vector<std::string>& patterns) {
  MountLayout l;
  l.mount = mount;
  struct stat st {};
  if (::stat(mount.c_str(), &st) != 0) throw error(fmt::format("{}: {}", mount, std::strerror(errno)));
  if (!S_ISDIR(st.st_mode)) throw error(fmt::format("{} is not a directory", mount));
  check_header(mount, l);
  auto avail = read_whole_file(mount + "/available_events");
  if (!avail)
    throw error(fmt::format("{} is not an eventfs mount (no readable available_events: {})", mount,
                            std::strerror(avail.code())));
  std::istringstream in(*avail);
  std::string line;
  while (std::getline(in, line))
    if (!(line = trim(line)).empty()) l.available.push_back(line);

  std::vector<bool> chosen(l.available.size(), false);
  for (const auto& p : patterns) {
    bool any = false;
    for (std::size_t i = 0; i < l.available.size(); ++i)
      if (::fnmatch(p.c_str(), l.available[i].c_str(), 0) == 0) chosen[i] = any = true;
    if (!any) {
      bool glob = p.find_first_of("*?[") != std::string::npos;
      throw error(fmt::format("{} '{}' in {}/available_events", glob ? "no event matches" : "no event", p, mount));
    }
  }

  for (const auto& n : list_dir(mount + "/types")) {
    const std::string path = mount + "/types/" + n;
    l.types.emplace(n, parse_named_type(n, must_read(path), path));
  }

  for (std::size_t i = 0; i < l.available.size(); ++i) {
    if (!chosen[i]) continue;
    Event e;
    e.name = l.available[i];
    const std::string dir = mount + "/" + e.name;
    e.fields = parse_format(must_read(dir + "/format"), dir + "/format", &e.size, &e.end);
    std::string id = trim(must_read(dir + "/id"));
    e.id = to_unsigned(id, dir + "/id");
    if (e.id == EVENTFS_ID_LOST) throw error(dir + "/id: id 0 is the lost-events record's");
    for (const auto& f : e.fields) {
      // A named type must agree with the field that uses it.
      auto t = l.types.find(f.type);
      if (t != l.types.end() && !t->second.is_enum &&
          (t->second.bits != f.bits || t->second.align != f.align || t->second.is_signed != f.is_signed))
        throw error(fmt::format("{}/types/{} disagrees with {}/format's field {}", mount, f.type, dir, f.name));
      if (const NamedType* en = l.enum_of(e.name, f.name); en && (en->bits != f.bits || f.count != 0))
        throw error(fmt::format("{}/types/{} binds {}.{}, whose format size differs", mount, en->name, e.name,
                                f.name));
    }
    l.events.push_back(std::move(e));
  }

  if (auto clock = read_whole_file(mount + "/trace_clock"); clock && !selected_clock(*clock).empty())
    l.clock = selected_clock(*clock);

  for (const auto& n : list_dir(mount + "/per_cpu")) {
    if (n.rfind("cpu", 0) != 0 || n.size() == 3 || n.find_first_not_of("0123456789", 3) != std::string::npos)
      continue;
    l.cpus.push_back(std::stoi(n.substr(3)));
  }
  std::sort(l.cpus.begin(), l.cpus.end());
  if (l.cpus.empty()) throw error(fmt::format("{} is not an eventfs mount (no per_cpu/cpuN streams)", mount));
  return l;
}

}  // namespace eventfs::record
