#include "support/layout_decoder.h"

#include <cstring>

namespace eventfs_it {

const LayoutDecoder::Slot* LayoutDecoder::Layout::find(const std::string& name) const {
  for (const auto& s : slots)
    if (s.f.name == name) return &s;
  return nullptr;
}

LayoutDecoder::Layout LayoutDecoder::lay_out(const std::vector<FormatLine>& fields) {
  Layout l;
  unsigned at = 0, most = 1;
  for (const auto& f : fields) {
    const unsigned align = f.align ? f.align : 1;
    at = (at + align - 1) / align * align;
    l.slots.push_back({f, at});
    at += f.bits / 8 * (f.kind == "array" ? f.count : 1);
    most = std::max(most, align);
  }
  l.size = (at + most - 1) / most * most;
  return l;
}

bool LayoutDecoder::load(const std::string& mount, const std::vector<std::string>& events, std::string& why) {
  // `header` holds two sections, "header:" and "lost:", each in the format language.
  std::string head, section;
  for (const auto& line : split_lines(slurp(mount + "/header"))) {
    if (line == "header:" || line == "lost:") {
      section = line;
    } else if (section == "header:" && !line.empty() && line[0] == '\t') {
      head += line + "\n";
    }
  }
  std::vector<std::string> bad;
  header_ = lay_out(parse_format(head, &bad));
  if (!bad.empty() || !header_.find("size") || !header_.find("id") || !header_.find("pid")) {
    why = "header: no size, id and pid fields in the format language";
    return false;
  }
  for (const auto& ev : events) {
    auto fields = parse_format(slurp(mount + "/" + ev + "/format"), &bad);
    if (!bad.empty()) {
      why = ev + "/format: " + bad.front();
      return false;
    }
    events_[static_cast<unsigned>(std::stoul(slurp(mount + "/" + ev + "/id")))] = {ev, lay_out(fields)};
  }
  // Enumerations name the values of the fields they list.
  for (const auto& name : list_dir(mount + "/types")) {
    NamedType t = parse_named_type(slurp(mount + "/types/" + name), &bad);
    if (!bad.empty()) {
      why = "types/" + name + ": " + bad.front();
      return false;
    }
    if (t.keys["parent"] != "enum") continue;
    for (const auto& f : t.fields)
      for (const auto& [value, label] : t.map) enum_names_[f].emplace(value, label);
  }
  return true;
}

bool LayoutDecoder::read_int(const char* p, const FormatLine& f, long long& out) {
  const unsigned n = f.bits / 8;
  if (n == 0 || n > 8) return false;
  unsigned long long v = 0;
  std::memcpy(&v, p, n);
  if (f.is_signed == 1 && n < 8 && (v >> (n * 8 - 1)) & 1) v |= ~0ull << (n * 8);
  out = static_cast<long long>(v);
  return true;
}

bool LayoutDecoder::read_uint(const std::string& bytes, std::size_t at, const Slot& s, unsigned long long& out) {
  const unsigned n = s.f.bits / 8;
  if (at + s.offset + n > bytes.size() || n == 0 || n > 8) return false;
  unsigned long long v = 0;
  std::memcpy(&v, bytes.data() + at + s.offset, n);  // little-endian: the low bytes
  out = v;
  return true;
}

bool LayoutDecoder::decode(const std::string& bytes, int cpu, std::vector<std::string>& lines, std::string& why) const {
  const Slot& size_s = *header_.find("size");
  const Slot& id_s = *header_.find("id");
  const Slot& pid_s = *header_.find("pid");
  std::size_t at = 0;
  while (at < bytes.size()) {
    unsigned long long size = 0, id = 0, pid = 0;
    if (!read_uint(bytes, at, size_s, size) || !read_uint(bytes, at, id_s, id) || !read_uint(bytes, at, pid_s, pid) ||
        size < header_.size || at + size > bytes.size()) {
      why = "a record cannot be framed at byte " + std::to_string(at);
      return false;
    }
    auto ev = events_.find(static_cast<unsigned>(id));
    if (id == 0) {
      ++const_cast<LayoutDecoder*>(this)->lost_records;
    } else if (ev == events_.end()) {
      ++other_records;
    } else {
      const std::size_t payload = at + header_.size;
      std::string line = std::to_string(static_cast<int>(static_cast<std::uint32_t>(pid))) + " [" +
                         (cpu < 10 ? "00" : cpu < 100 ? "0" : "") + std::to_string(cpu) + "] " + ev->second.first + ":";
      for (const auto& s : ev->second.second.slots) {
        line += " " + s.f.name + "=";
        const char* p = bytes.data() + payload + s.offset;
        const auto names = enum_names_.find(ev->second.first + "." + s.f.name);
        long long value = 0;
        if (s.f.kind == "array" && s.f.type == "char") {
          for (unsigned i = 0; i < s.f.count && p[i]; ++i) line += (p[i] < 0x20 || p[i] == 0x7f) ? '?' : p[i];
          continue;
        }
        read_int(p, s.f, value);
        if (names != enum_names_.end()) {
          // A value its enumeration does not name shows as one trace_pipe never prints.
          line += names->second.count(value) ? names->second.at(value) : "<unnamed " + std::to_string(value) + ">";
        } else {
          line += s.f.is_signed == 1 ? std::to_string(value) : std::to_string(static_cast<unsigned long long>(value));
        }
      }
      lines.push_back(line);
    }
    at += size;
  }
  return true;
}

}  // namespace eventfs_it
