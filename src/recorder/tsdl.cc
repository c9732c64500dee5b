#include "recorder/tsdl.h"

#include <bit>
#include <cctype>

#include <fmt/format.h>

namespace eventfs::recorder {
namespace {

std::string integer(unsigned bits, unsigned align_bytes, bool is_signed, const char* extra = "") {
  return fmt::format("integer {{ size = {}; align = {}; signed = {};{} }}", bits, align_bytes * 8,
                     is_signed ? "true" : "false", extra);
}

// A TSDL string literal.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
      continue;
    }
    out += static_cast<char>(c);
  }
  return out + "\"";
}

// An enumeration's labels, one value each.
std::string enum_body(const NamedType& t) {
  std::string out;
  for (const auto& [value, label] : t.map) out += fmt::format("\t\t\t{} = {},\n", quoted(label), value);
  return out;
}

std::string field_decl(const MountLayout& l, const Event& e, const Field& f) {
  const std::string comment = fmt::format(" /* {} */", f.type);
  // (An enumeration the kernel gave no values stays an integer: TSDL has
  // no empty enumeration.)
  if (const NamedType* en = l.enum_of(e.name, f.name); en && !en->map.empty())
    return fmt::format("\t\tenum : {} {{\n{}\t\t}} {};{}\n", integer(f.bits, f.align, f.is_signed), enum_body(*en),
                       f.name, fmt::format(" /* {} */", en->name));
  // char arrays hold NUL-terminated text: 8-bit integers with an encoding,
  // which readers show as strings.
  if (f.count > 0 && f.bits == 8 && f.type == "char")
    return fmt::format("\t\t{} {}[{}];{}\n", integer(8, f.align, f.is_signed, " encoding = UTF8;"), f.name, f.count,
                       comment);
  if (f.count > 0) return fmt::format("\t\t{} {}[{}];{}\n", integer(f.bits, f.align, f.is_signed), f.name, f.count, comment);
  return fmt::format("\t\t{} {};{}\n", integer(f.bits, f.align, f.is_signed), f.name, comment);
}

}  // namespace

std::string tsdl_identifier(const std::string& name) {
  std::string out;
  for (unsigned char c : name) out += std::isalnum(c) || c == '_' ? static_cast<char>(c) : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

std::string tsdl_metadata(const MountLayout& l, const std::string& hostname, const ClockOffset& offset) {
  const char* order = std::endian::native == std::endian::little ? "le" : "be";
  const std::string clock = tsdl_identifier(l.clock);
  const Field* pid = nullptr;
  for (const auto& f : l.header_fields)
    if (f.name == "pid") pid = &f;
  std::string out = "/* CTF 1.8 */\n\n";
  out += fmt::format(
      "/* Written by eventfs-record from {0}: the record header ({0}/header),\n"
      " * the named types ({0}/types/) and each event's format and id. */\n\n",
      l.mount);
  out += "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n";
  out += "typealias integer { size = 32; align = 32; signed = false; } := uint32_t;\n";
  out += "typealias integer { size = 64; align = 64; signed = false; } := uint64_t;\n\n";
  out += fmt::format(
      "trace {{\n"
      "\tmajor = 1;\n"
      "\tminor = 8;\n"
      "\tbyte_order = {};\n"
      "\tpacket.header := struct {{\n"
      "\t\tuint32_t magic;\n"
      "\t\tuint32_t stream_id;\n"
      "\t}};\n"
      "}};\n\n",
      order);
  out += fmt::format(
      "env {{\n"
      "\thostname = {};\n"
      "\ttracer_name = \"eventfs-record\";\n"
      "\teventfs_mount = {};\n"
      "}};\n\n",
      quoted(hostname), quoted(l.mount));
  out += fmt::format(
      "/* The trace clock of eventfs's tracefs instance, in {}; its zero was\n"
      " * offset_s seconds and offset counts after the Unix epoch, as the real\n"
      " * time read beside the clock at the recording's start says. */\n"
      "clock {{\n"
      "\tname = {};\n"
      "\tdescription = {};\n"
      "\tfreq = {};\n"
      "\toffset_s = {};\n"
      "\toffset = {};\n"
      "\tabsolute = false;\n"
      "}};\n\n"
      "typealias integer {{ size = 64; align = 64; signed = false; map = clock.{}.value; }} := uint64_clock_t;\n"
      "typealias integer {{ size = 32; align = 32; signed = false; map = clock.{}.value; }} := uint32_clock_t;\n\n",
      l.clock_decl.unit, clock, quoted("tracefs trace clock " + l.clock), l.clock_decl.freq, offset.seconds,
      offset.counts, clock, clock);
  out += fmt::format(
      "stream {{\n"
      "\tid = 0;\n"
      "\tpacket.context := struct {{\n"
      "\t\tuint64_clock_t timestamp_begin;\n"
      "\t\tuint64_clock_t timestamp_end;\n"
      "\t\tuint64_t content_size;\n"
      "\t\tuint64_t packet_size;\n"
      "\t\tuint64_t events_discarded;\n"
      "\t\tuint32_t cpu_id;\n"
      "\t}};\n"
      "\tevent.header := struct {{\n"
      "\t\tuint32_clock_t timestamp;\n"
      "\t\tuint32_t id;\n"
      "\t}};\n"
      "\tevent.context := struct {{\n"
      "\t\t{} pid; /* {} */\n"
      "\t}};\n"
      "}};\n",
      integer(pid ? pid->bits : 32, pid ? pid->align : 4, pid ? pid->is_signed : true), pid ? pid->type : "pid_t");
  for (const auto& e : l.events) {
    out += fmt::format("\nevent {{\n\tname = {};\n\tid = {};\n\tstream_id = 0;\n\tfields := struct {{\n",
                       quoted(e.name), e.id);
    for (const auto& f : e.fields) out += field_decl(l, e, f);
    out += "\t};\n};\n";
  }
  return out;
}

}  // namespace eventfs::recorder
