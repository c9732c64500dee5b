// Builders for the unit tests of the record path: raw kernel records laid out
// by a fixture kernel's format, and ring-buffer sub-buffers holding them, as
// the kernel writes them (header_page layout, events/header_event headers).
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/raw_event.h"
#include "projection/binding.h"
#include "ring/ring.h"

namespace eventfs::testing {

// A raw record of one raw event, fields set by name.
class RawRecord {
 public:
  explicit RawRecord(const RawEvent& ev) : ev_(ev) {
    std::size_t fixed = 0;
    for (const auto* list : {&ev.common_fields, &ev.fields})
      for (const auto& f : *list) fixed = std::max<std::size_t>(fixed, f.offset + f.size);
    bytes_.assign(fixed, 0);
    set_int("common_type", static_cast<std::uint64_t>(ev.id));
  }

  RawRecord& set_int(const std::string& name, std::uint64_t v, unsigned index = 0) {
    const RawField& f = field(name);
    std::size_t at = f.offset + index * f.elem_bytes;
    if (at + f.elem_bytes > bytes_.size()) throw std::runtime_error("no room for " + name);
    std::memcpy(bytes_.data() + at, &v, f.elem_bytes);  // little endian
    return *this;
  }

  // A string into a fixed char array (NUL-padded, truncated to fit), or a
  // __data_loc/__rel_loc/tail string appended after the fixed part (with its
  // NUL, as the kernel stores __string()s).
  RawRecord& set_str(const std::string& name, const std::string& s, bool nul = true) {
    const RawField& f = field(name);
    if (f.shape == FieldShape::Array) {
      std::memset(bytes_.data() + f.offset, 0, f.size);
      std::memcpy(bytes_.data() + f.offset, s.data(), std::min<std::size_t>(s.size(), f.size));
      return *this;
    }
    std::string data = s;
    if (nul) data.push_back('\0');
    if (f.loc == DynLoc::Tail) {
      bytes_.resize(f.offset);
      bytes_.insert(bytes_.end(), data.begin(), data.end());
      return *this;
    }
    std::uint32_t off = static_cast<std::uint32_t>(bytes_.size());
    bytes_.insert(bytes_.end(), data.begin(), data.end());
    std::uint32_t rel = f.loc == DynLoc::RelLoc ? off - (f.offset + 4) : off;
    std::uint32_t word = (static_cast<std::uint32_t>(data.size()) << 16) | rel;
    std::memcpy(bytes_.data() + f.offset, &word, 4);
    return *this;
  }

  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

 private:
  const RawField& field(const std::string& name) const {
    const RawField* f = ev_.field(name);
    if (!f) throw std::runtime_error(ev_.name + " has no field " + name);
    return *f;
  }
  const RawEvent& ev_;
  std::vector<std::uint8_t> bytes_;
};

// A ring-buffer sub-buffer: u64 timestamp, a long commit word (4 or 8
// bytes), then events with 4-byte headers (type_len:5, time_delta:27).
class SubbufBuilder {
 public:
  SubbufBuilder(unsigned long_size, std::uint64_t ts, std::size_t capacity = 4096)
      : long_size_(long_size), page_(capacity, 0) {
    std::memcpy(page_.data(), &ts, 8);
    at_ = header();
  }
  std::size_t header() const { return 8 + long_size_; }

  // An event record; `big` forces the type_len 0 form (length word).
  SubbufBuilder& event(const std::vector<std::uint8_t>& data, std::uint32_t delta = 0, bool big = false) {
    std::size_t len = (data.size() + 3) & ~std::size_t{3};
    bool small = !big && len <= 28 * 4 && len > 0;
    std::uint32_t type_len = small ? static_cast<std::uint32_t>(len / 4) : 0;
    put32(type_len | (delta << 5));
    if (!small) put32(static_cast<std::uint32_t>(len + 4));
    need(len);
    std::memcpy(page_.data() + at_, data.data(), data.size());
    at_ += len;
    return *this;
  }
  // A time extend (type_len 30) adding `delta` to the clock.
  SubbufBuilder& time_extend(std::uint64_t delta) {
    put32(30u | static_cast<std::uint32_t>((delta & ((1u << 27) - 1)) << 5));
    put32(static_cast<std::uint32_t>(delta >> 27));
    return *this;
  }
  // An absolute time stamp (type_len 31): the low 59 bits of `ts`.
  SubbufBuilder& time_stamp(std::uint64_t ts) {
    put32(31u | static_cast<std::uint32_t>((ts & ((1u << 27) - 1)) << 5));
    put32(static_cast<std::uint32_t>((ts >> 27) & 0xffffffffu));
    return *this;
  }
  // Padding (type_len 29): its length word, then `len` bytes. The word
  // counts itself, as the kernel's (rb_reset_tail) does. `delta`: the time
  // delta of a discarded event (1 at a sub-buffer's end).
  SubbufBuilder& padding(std::uint32_t len, std::uint32_t delta = 1) {
    put32(29u | (delta << 5));
    put32(len + 4);
    need(len);
    at_ += len;
    return *this;
  }
  // The lost-events mark: count >= 0 stores it after the data, -1 sets the
  // flag only.
  SubbufBuilder& missed(std::int64_t count) {
    missed_ = count;
    return *this;
  }
  std::size_t data_size() const { return at_ - header(); }

  std::vector<std::uint8_t> build() const {
    std::vector<std::uint8_t> p = page_;
    std::uint64_t commit = data_size();
    if (missed_ != 0) {
      commit |= 1ull << 31;
      if (missed_ > 0) {
        commit |= 1ull << 30;
        std::uint64_t n = static_cast<std::uint64_t>(missed_);
        std::memcpy(p.data() + at_, &n, long_size_);
      }
    }
    std::memcpy(p.data() + 8, &commit, long_size_);
    return p;
  }

 private:
  void need(std::size_t n) const {
    if (at_ + n > page_.size()) throw std::runtime_error("sub-buffer full");
  }
  void put32(std::uint32_t v) {
    need(4);
    std::memcpy(page_.data() + at_, &v, 4);
    at_ += 4;
  }
  unsigned long_size_;
  std::vector<std::uint8_t> page_;
  std::size_t at_;
  std::int64_t missed_ = 0;
};

// Collects what a ring delivers.
struct CollectSink : RingSink {
  struct Item {
    bool lost = false;
    std::uint64_t ts = 0;
    std::vector<std::uint8_t> raw;  // record
    std::uint64_t count = 0;        // lost
    bool unknown = false;           // lost
  };
  void record(std::uint64_t ts, const std::uint8_t* raw, std::uint32_t len) override {
    items.push_back({false, ts, std::vector<std::uint8_t>(raw, raw + len), 0, false});
  }
  void lost(std::uint64_t ts, std::uint64_t count, bool unknown) override {
    items.push_back({true, ts, {}, count, unknown});
  }
  std::vector<Item> records() const {
    std::vector<Item> r;
    for (const auto& i : items)
      if (!i.lost) r.push_back(i);
    return r;
  }
  std::vector<Item> items;
};

// Reads stable fields out of a projected payload by name.
struct StableView {
  const Binding& b;
  const std::uint8_t* p;
  const FieldSlot& slot(const std::string& name) const {
    for (std::size_t i = 0; i < b.event->fields.size(); ++i)
      if (b.event->fields[i].decl.name == name) return b.layout.slots[i];
    throw std::runtime_error("no stable field " + name);
  }
  std::string str(const std::string& name) const {
    const FieldSlot& s = slot(name);
    return std::string(reinterpret_cast<const char*>(p + s.offset), s.size);
  }
  std::string text(const std::string& name) const {
    std::string s = str(name);
    return s.substr(0, s.find('\0'));
  }
  template <typename T>
  T num(const std::string& name, unsigned index = 0) const {
    T v;
    std::memcpy(&v, p + slot(name).offset + index * sizeof(T), sizeof(T));
    return v;
  }
};

}  // namespace eventfs::testing
