// Builders for the unit tests of the record path: raw kernel records laid out
// by a fixture kernel's format, and ring-buffer sub-buffers holding them, as
// the kernel writes them (header_page layout, events/header_event headers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "format/raw_event.h"
#include "projection/binding.h"
#include "ring/ring.h"

namespace eventfs::testing {

// A raw record of one raw event, fields set by name.
class RawRecord {
 public:
  explicit RawRecord(const RawEvent& ev);

  RawRecord& set_int(const std::string& name, std::uint64_t v, unsigned index = 0);

  // A string into a fixed char array (NUL-padded, truncated to fit), or a
  // __data_loc/__rel_loc/tail string appended after the fixed part (with its
  // NUL, as the kernel stores __string()s).
  RawRecord& set_str(const std::string& name, const std::string& s, bool nul = true);

  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

 private:
  const RawField& field(const std::string& name) const;
  const RawEvent& ev_;
  std::vector<std::uint8_t> bytes_;
};

// A ring-buffer sub-buffer: u64 timestamp, a long commit word (4 or 8
// bytes), then events with 4-byte headers (type_len:5, time_delta:27).
class SubbufBuilder {
 public:
  SubbufBuilder(unsigned long_size, std::uint64_t ts, std::size_t capacity = 4096);
  std::size_t header() const { return 8 + long_size_; }

  // An event record; `big` forces the type_len 0 form (length word).
  SubbufBuilder& event(const std::vector<std::uint8_t>& data, std::uint32_t delta = 0, bool big = false);
  // A time extend (type_len 30) adding `delta` to the clock.
  SubbufBuilder& time_extend(std::uint64_t delta);
  // An absolute time stamp (type_len 31): the low 59 bits of `ts`.
  SubbufBuilder& time_stamp(std::uint64_t ts);
  // Padding (type_len 29): its length word, then `len` bytes. The word
  // counts itself, as the kernel's (rb_reset_tail) does. `delta`: the time
  // delta of a discarded event (1 at a sub-buffer's end).
  SubbufBuilder& padding(std::uint32_t len, std::uint32_t delta = 1);
  // The lost-events mark: count >= 0 stores it after the data, -1 sets the
  // flag only.
  SubbufBuilder& missed(std::int64_t count);
  std::size_t data_size() const { return at_ - header(); }

  std::vector<std::uint8_t> build() const;

 private:
  void need(std::size_t n) const;
  void put32(std::uint32_t v);
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
  void record(std::uint64_t ts, const std::uint8_t* raw, std::uint32_t len) override;
  void lost(std::uint64_t ts, std::uint64_t count, bool unknown) override;
  std::vector<Item> records() const;
  std::vector<Item> items;
};

// SubbufParser's walk of a whole sub-buffer (a gtest failure if it does not
// load or the walk stops short of its end).
CollectSink walk(const std::vector<std::uint8_t>& page, unsigned long_size);

// The fields of a sched_switch record.
struct Switch {
  const char* prev_comm;
  int prev_pid;
  std::uint64_t prev_state;
  const char* next_comm;
  int next_pid;
};

// A raw sched_switch record laid out as `b`'s raw event (priorities 120).
std::vector<std::uint8_t> switch_record(const Binding& b, const Switch& s, int common_pid);

// Reads stable fields out of a projected payload by name.
struct StableView {
  const Binding& b;
  const std::uint8_t* p;
  const FieldSlot& slot(const std::string& name) const;
  std::string str(const std::string& name) const;
  std::string text(const std::string& name) const;
  template <typename T>
  T num(const std::string& name, unsigned index = 0) const {
    T v;
    std::memcpy(&v, p + slot(name).offset + index * sizeof(T), sizeof(T));
    return v;
  }
};

}  // namespace eventfs::testing
