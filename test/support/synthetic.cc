// Raw records and ring-buffer sub-buffers built by hand (see synthetic.h).
#include "support/synthetic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "ring/subbuf.h"

namespace eventfs::testing {

RawRecord::RawRecord(const RawEvent& ev) : ev_(ev) {
  std::size_t fixed = 0;
  for (const auto* list : {&ev.common_fields, &ev.fields})
    for (const auto& f : *list) fixed = std::max<std::size_t>(fixed, f.offset + f.size);
  bytes_.assign(fixed, 0);
  set_int("common_type", static_cast<std::uint64_t>(ev.id));
}

RawRecord& RawRecord::set_int(const std::string& name, std::uint64_t v, unsigned index) {
  const RawField& f = field(name);
  std::size_t at = f.offset + index * f.elem_bytes;
  if (at + f.elem_bytes > bytes_.size()) throw std::runtime_error("no room for " + name);
  std::memcpy(bytes_.data() + at, &v, f.elem_bytes);  // little endian
  return *this;
}

RawRecord& RawRecord::set_str(const std::string& name, const std::string& s, bool nul) {
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

const RawField& RawRecord::field(const std::string& name) const {
  const RawField* f = ev_.field(name);
  if (!f) throw std::runtime_error(ev_.name + " has no field " + name);
  return *f;
}

SubbufBuilder::SubbufBuilder(unsigned long_size, std::uint64_t ts, std::size_t capacity)
    : long_size_(long_size), page_(capacity, 0) {
  std::memcpy(page_.data(), &ts, 8);
  at_ = header();
}

SubbufBuilder& SubbufBuilder::event(const std::vector<std::uint8_t>& data, std::uint32_t delta, bool big) {
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

SubbufBuilder& SubbufBuilder::time_extend(std::uint64_t delta) {
  put32(30u | static_cast<std::uint32_t>((delta & ((1u << 27) - 1)) << 5));
  put32(static_cast<std::uint32_t>(delta >> 27));
  return *this;
}

SubbufBuilder& SubbufBuilder::time_stamp(std::uint64_t ts) {
  put32(31u | static_cast<std::uint32_t>((ts & ((1u << 27) - 1)) << 5));
  put32(static_cast<std::uint32_t>((ts >> 27) & 0xffffffffu));
  return *this;
}

SubbufBuilder& SubbufBuilder::padding(std::uint32_t len, std::uint32_t delta) {
  put32(29u | (delta << 5));
  put32(len + 4);
  need(len);
  at_ += len;
  return *this;
}

std::vector<std::uint8_t> SubbufBuilder::build() const {
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

void SubbufBuilder::need(std::size_t n) const {
  if (at_ + n > page_.size()) throw std::runtime_error("sub-buffer full");
}

void SubbufBuilder::put32(std::uint32_t v) {
  need(4);
  std::memcpy(page_.data() + at_, &v, 4);
  at_ += 4;
}

void CollectSink::record(std::uint64_t ts, const std::uint8_t* raw, std::uint32_t len) {
  items.push_back({false, ts, std::vector<std::uint8_t>(raw, raw + len), 0, false});
}

void CollectSink::lost(std::uint64_t ts, std::uint64_t count, bool unknown) {
  items.push_back({true, ts, {}, count, unknown});
}

std::vector<CollectSink::Item> CollectSink::records() const {
  std::vector<Item> r;
  for (const auto& i : items)
    if (!i.lost) r.push_back(i);
  return r;
}

CollectSink walk(const std::vector<std::uint8_t>& page, unsigned long_size) {
  SubbufParser parser(long_size);
  EXPECT_TRUE(parser.load(page.data(), page.size()));
  CollectSink sink;
  std::uint32_t from = 0;
  parser.walk(sink, from, 1000);
  EXPECT_EQ(from, parser.data_size());
  return sink;
}

std::vector<std::uint8_t> switch_record(const Binding& b, const Switch& s, int common_pid) {
  RawRecord r(b.raw);
  r.set_int("common_pid", static_cast<std::uint64_t>(common_pid));
  r.set_str("prev_comm", s.prev_comm).set_int("prev_pid", static_cast<std::uint64_t>(s.prev_pid));
  r.set_int("prev_prio", 120).set_int("prev_state", s.prev_state);
  r.set_str("next_comm", s.next_comm).set_int("next_pid", static_cast<std::uint64_t>(s.next_pid));
  r.set_int("next_prio", 120);
  return r.bytes();
}

const FieldSlot& StableView::slot(const std::string& name) const {
  for (std::size_t i = 0; i < b.event->fields.size(); ++i)
    if (b.event->fields[i].decl.name == name) return b.layout.slots[i];
  throw std::runtime_error("no stable field " + name);
}

std::string StableView::str(const std::string& name) const {
  const FieldSlot& s = slot(name);
  return std::string(reinterpret_cast<const char*>(p + s.offset), s.size);
}

std::string StableView::text(const std::string& name) const {
  std::string s = str(name);
  return s.substr(0, s.find('\0'));
}

SubbufBuilder& SubbufBuilder::missed(std::int64_t count) {
  missed_ = count;
  return *this;
}

}  // namespace eventfs::testing
