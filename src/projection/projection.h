// Projection: the per-record program that turns one raw kernel record into
// the stable record of a stable event (the layout of include/eventfs/record.h).
//
// Compiled once at mount from a Binding into a flat array of ops; running it
// is a loop over the ops with no lookups by name, no allocation and no
// indirect calls. Every read from the raw record is checked against the
// record's length: a field the record is too short to hold (a truncated
// record, a __data_loc word pointing outside it) comes out zero.
//
// Conversions (see Conversion in binding.h):
//  * Integer: the raw scalar is loaded with the RAW field's size and
//    signedness (sign- or zero-extended to 64 bits) and stored in the stable
//    field's size (so narrowing truncates, widening keeps the raw sign).
//  * IntegerArray: the same per element; stable elements beyond what the raw
//    array supplies (a shorter fixed array, a shorter __data_loc array) are 0.
//  * Bytes into char[M]: from a fixed char array, a __data_loc string (32-bit
//    word at the field offset: low 16 bits = offset from the record start,
//    high 16 bits = length), a __rel_loc string (same word, offset counted
//    from the end of the 4-byte rel_loc word itself) or a tail array (from
//    the field offset to the end of the record). At most M-1 bytes are
//    copied, stopping at the first NUL; the rest of the M bytes is NUL, so a
//    stable string is always NUL-terminated (a longer one is truncated).
//  * TaskState: the letter of the first entry, in table order, of the raw
//    event's __print_flags() table whose bits are all set in the value (read
//    unsigned); 'R' when none is. Entries with value 0 are ignored. When the
//    table is a list of single bits in ascending order (every kernel so far)
//    this is one count-trailing-zeros and a table load, precomputed at
//    compile time.
//
// Speed: a record long enough for every fixed field (all but truncated
// ones) takes an inline fast path with one length check: the plain copies,
// char[16] strings (one 16-byte SSE2 load and store) and task states batched
// by kind, padding zeroed with whole 8-byte stores; other ops run checked.
// (bench/projection_bench measures it.)
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <eventfs/record.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "projection/binding.h"

namespace eventfs {

class Projection {
 public:
  enum class OpKind : std::uint8_t {
    Copy1,         // scalar -> scalar of the same size: a plain copy
    Copy2,
    Copy4,
    Copy8,
    Int,           // scalar -> scalar of another size
    IntArray,      // fixed raw array -> fixed stable array
    IntDynArray,   // __data_loc/__rel_loc raw array -> fixed stable array
    Str16,         // char[N >= 16] -> char[16]: one 16-byte load and store
    BytesFixed,    // char[N] -> char[M]
    BytesDataLoc,  // __data_loc char[] -> char[M]
    BytesRelLoc,   // __rel_loc char[] -> char[M]
    BytesTail,     // char x[] at the end of the record -> char[M]
    TaskStateBits, // single-bit ascending table: ctz lookup
    TaskStateTable,// any other table: scan entries
    Zero,          // padding between fields: dst_count zero bytes
  };

  // One op: everything needed to fill one stable field, in 16 bytes.
  struct Op {
    OpKind kind;
    std::uint8_t src_size;    // bytes of one raw element (1, 2, 4, 8)
    std::uint8_t dst_size;    // bytes of one stable element (1, 2, 4, 8)
    bool src_signed;          // the raw field's signedness
    std::uint16_t src_off;    // raw field offset in the record
    std::uint16_t dst_off;    // stable field offset in the payload
    std::uint16_t src_count;  // raw elements (fixed arrays) / raw bytes (char[N])
    std::uint16_t dst_count;  // stable elements, or M for char[M]
    std::uint32_t aux;        // TaskState: index into the state tables
  };

  // Compiles a binding. Never fails for a binding bind_stable_event() made.
  static Projection compile(const Binding& b);

  // Writes the stable payload (payload_size() bytes, fully overwritten, padding
  // zeroed) of the raw record `raw` of `len` bytes into `out`. Each op writes
  // every byte of its field; the gaps between fields are zeroed.
  // `out` must not overlap `raw`. Inline: the fast path is a handful of
  // loads and stores per field.
  inline void project(const std::uint8_t* __restrict raw, std::uint32_t len, std::uint8_t* __restrict out) const;
  // The same, one op at a time with every bounds check: what project() does
  // for a truncated record, and the reference its fast paths are tested against.
  void project_checked(const std::uint8_t* raw, std::uint32_t len, std::uint8_t* out) const;

  // The raw event (RawEvent::id, the record's common_type) this projection reads.
  int raw_id() const { return raw_id_; }
  std::uint32_t stable_id() const { return stable_id_; }
  // Size of the stable record (its layout's size) in bytes.
  std::uint32_t payload_size() const { return payload_size_; }
  // common_pid of a raw record of this event (0 if the record is too short).
  std::int32_t pid(const std::uint8_t* raw, std::uint32_t len) const {
    if (pid_off_ + pid_size_ > len) return 0;
    if (pid_size_ == 4) {
      std::int32_t v;
      __builtin_memcpy(&v, raw + pid_off_, 4);
      return v;
    }
    return pid_other_size(raw);
  }

  const std::vector<Op>& ops() const { return ops_; }
  const Binding& binding() const { return *binding_; }

 private:
  friend class ProjectionTable;
  // A __print_flags table, precomputed.
  struct StateTable {
    std::uint64_t mask = 0;              // TaskStateBits: union of the bits
    std::array<char, 64> by_bit{};       // TaskStateBits: letter of bit i
    std::vector<std::pair<std::uint64_t, char>> entries;  // TaskStateTable
  };
  void run_op(const Op& op, const std::uint8_t* raw, std::uint32_t len, std::uint8_t* out) const;
  // The ops after the fast path: tails_ (inline), then rest_.
  [[gnu::always_inline]] inline void project_more(const std::uint8_t* raw, std::uint32_t len, std::uint8_t* out) const;
  void project_rest(const std::uint8_t* raw, std::uint32_t len, std::uint8_t* out) const;
  std::int32_t pid_other_size(const std::uint8_t* raw) const;

  const Binding* binding_ = nullptr;
  std::vector<Op> ops_;  // in stable offset order, padding (Zero) included
  // The fast path, for a record at least fixed_end_ bytes long (every
  // record but a truncated one): the common ops batched by kind in one array
  // (str16, copy4, copy8, copy2, copy1, state, zero; counts in nfast_), run
  // with no bounds checks (zero first), then the other ops (checked).
  struct Move {
    std::uint16_t src, dst;
    std::uint16_t aux;  // state: the table
    std::uint8_t size;  // state: raw size
  };
  enum { kStr16, kCopy4, kCopy8, kCopy2, kCopy1, kState, kZero, kBatches };
  // The fast path with its op counts built in, for the common shapes (no
  // copy2/copy1 and at most 2 str16, 4 copy4, 2 copy8, 1 state, 2 zero):
  // straight-line code with no per-kind loop, chosen at compile(); null for
  // the other shapes, which take the loops.
  using FixedFn = void (*)(const Projection&, const std::uint8_t*, std::uint8_t*);
  template <int S16, int C4, int C8, int ST, int Z>
  static void run_fixed(const Projection& p, const std::uint8_t* __restrict raw, std::uint8_t* __restrict out);
  static FixedFn fixed_fn_for(const std::array<std::uint8_t, kBatches>& n);
  FixedFn fixed_fn_ = nullptr;
  std::vector<Move> fast_;
  std::array<std::uint8_t, kBatches> nfast_{};
  bool more_ = false;  // tails_ or rest_ has ops
  std::vector<Op> rest_;
  std::uint32_t fixed_end_ = 0;
  std::vector<StateTable> states_;
  int raw_id_ = -1;
  std::uint32_t stable_id_ = 0;
  std::uint32_t payload_size_ = 0;
  std::uint16_t pid_off_ = 4;
  std::uint8_t pid_size_ = 4;
  int next_same_raw_ = -1;  // ProjectionTable: the next projection of the same raw id
  std::size_t index_ = 0;   // ProjectionTable: its place in the table
  // Strings at the record's end (BytesTail) into char[M], M > 16 and a
  // multiple of 8, as trace_marker's text: after the fast path, with no
  // per-op dispatch (they need no fixed_end_).
  std::vector<Op> tails_;
};

namespace projection_detail {
#ifdef __SSE2__
alignas(64) inline constexpr std::uint8_t kKeep[32] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                                       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
// dst[0, 16) from 16 readable bytes at src: the bytes before the first NUL
// and before byte `end` (at most 15), then NULs. One load, one store.
inline void str16(const std::uint8_t* src, std::uint8_t* dst, unsigned end) {
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  unsigned stop = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128()))) | (1u << end);
  __m128i keep = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kKeep + 16 - __builtin_ctz(stop)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_and_si128(v, keep));
}
// dst[0, m) for m > 16, m % 8 == 0: at most m-1 bytes of src (of which
// `avail` belong to the string), up to the first NUL, then NULs; 16 bytes
// at a time while `readable` (bytes from src on, >= avail) allows, then
// byte by byte; the last 8 bytes as one store.
inline void str_m8(const std::uint8_t* src, std::size_t avail, std::size_t readable, std::uint8_t* dst,
                   std::size_t m) {
  const std::size_t lim = std::min(avail, m - 1);
  const __m128i zero = _mm_setzero_si128();
  std::size_t i = 0;
  __m128i v = zero;  // the bytes from i on, once the string ends (NULs after it)
  bool ended = false;
  for (; i + 16 <= m && i < lim && i + 16 <= readable; i += 16) {
    v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    unsigned stop = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero)));
    if (lim - i < 16) stop |= 1u << (lim - i);
    if (stop) {
      v = _mm_and_si128(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kKeep + 16 - __builtin_ctz(stop))));
      ended = true;
      break;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), v);
  }
  if (!ended) {
    // Fewer than 16 string bytes left (the 8-byte tail, or the record ends
    // within 16 bytes): byte by byte.
    alignas(16) std::uint8_t last[16] = {};
    for (std::size_t k = 0; i + k < lim && src[i + k]; ++k) last[k] = src[i + k];
    v = _mm_load_si128(reinterpret_cast<const __m128i*>(last));
  }
  for (; i + 16 <= m; i += 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), v);
    v = zero;
  }
  if (i < m) _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + i), v);  // m % 8 == 0: the last 8
}
#endif
inline std::uint64_t load_uint(const std::uint8_t* p, unsigned size) {
  switch (size) {
    case 1: return *p;
    case 2: { std::uint16_t v; __builtin_memcpy(&v, p, 2); return v; }
    case 4: { std::uint32_t v; __builtin_memcpy(&v, p, 4); return v; }
    default: { std::uint64_t v; __builtin_memcpy(&v, p, 8); return v; }
  }
}
}  // namespace projection_detail

inline void Projection::project_more(const std::uint8_t* raw, std::uint32_t len, std::uint8_t* out) const {
#ifdef __SSE2__
  for (const Op& t : tails_) {
    if (t.src_off < len)
      projection_detail::str_m8(raw + t.src_off, len - t.src_off, len - t.src_off, out + t.dst_off, t.dst_count);
    else
      __builtin_memset(out + t.dst_off, 0, t.dst_count);
  }
#endif
  if (!rest_.empty()) project_rest(raw, len, out);
}

inline void Projection::project(const std::uint8_t* __restrict raw, std::uint32_t len,
                                std::uint8_t* __restrict out) const {
  if (len < fixed_end_) return project_checked(raw, len, out);  // truncated
  if (fixed_fn_) {
    fixed_fn_(*this, raw, out);
    if (more_) project_more(raw, len, out);
    return;
  }
  if (fast_.empty()) {
    project_more(raw, len, out);
    return;
  }
  // Padding first, as whole 8-byte stores that may spill into neighbouring
  // fields (each is written after); Move::src holds the store's offset.
  const Move* m = fast_.data();
  const Move* z = m + fast_.size() - nfast_[kZero];
  for (const Move* e = m + fast_.size(); z < e; ++z) {
    std::uint64_t zero = 0;
    __builtin_memcpy(out + z->src, &zero, 8);
  }
#ifdef __SSE2__
  for (const Move* e = m + nfast_[kStr16]; m < e; ++m) projection_detail::str16(raw + m->src, out + m->dst, 15);
#endif
  for (const Move* e = m + nfast_[kCopy4]; m < e; ++m) __builtin_memcpy(out + m->dst, raw + m->src, 4);
  for (const Move* e = m + nfast_[kCopy8]; m < e; ++m) __builtin_memcpy(out + m->dst, raw + m->src, 8);
  for (const Move* e = m + nfast_[kCopy2]; m < e; ++m) __builtin_memcpy(out + m->dst, raw + m->src, 2);
  for (const Move* e = m + nfast_[kCopy1]; m < e; ++m) out[m->dst] = raw[m->src];
  for (const Move* e = m + nfast_[kState]; m < e; ++m) {
    const StateTable& t = states_[m->aux];
    std::uint64_t v = projection_detail::load_uint(raw + m->src, m->size) & t.mask;
    out[m->dst] = static_cast<std::uint8_t>(v ? t.by_bit[static_cast<std::size_t>(__builtin_ctzll(v))] : 'R');
  }
  if (more_) project_more(raw, len, out);
}

// Raw event id -> projection, O(1): a vector indexed by the raw id (tracefs
// ids are small dense integers; ids past kMaxDenseId go to a sorted side list).
// Two stable events fed by the same raw event are chained: find() gives the
// first (catalog order), next_same_raw() the others.
class ProjectionTable {
 public:
  ProjectionTable() = default;
  // Compiles every binding. The bindings must outlive the table.
  explicit ProjectionTable(const std::vector<Binding>& bindings);
  // Movable (the projections stay where they are), not copyable: the table
  // holds pointers into its own vector.
  ProjectionTable(ProjectionTable&&) = default;
  ProjectionTable& operator=(ProjectionTable&&) = default;
  ProjectionTable(const ProjectionTable&) = delete;
  ProjectionTable& operator=(const ProjectionTable&) = delete;
  void add(const Binding& b);

  const Projection* find(int raw_id) const {
    // (An unsigned compare: a negative id is out of range too.)
    if (static_cast<std::size_t>(static_cast<unsigned>(raw_id)) < dense_.size())
      return dense_[static_cast<std::size_t>(raw_id)];
    return find_sparse(raw_id);
  }
  // The raw id of a record (its common_type), or -1 if the record is too short.
  int raw_id_of(const std::uint8_t* raw, std::uint32_t len) const {
    if (len < type_off_ + type_size_) return -1;
    if (type_size_ == 2) {
      std::uint16_t v;
      __builtin_memcpy(&v, raw + type_off_, 2);
      return v;
    }
    return read_type_slow(raw);
  }
  const Projection* find_record(const std::uint8_t* raw, std::uint32_t len) const {
    return find(raw_id_of(raw, len));
  }
  const Projection* next_same_raw(const Projection& p) const {
    return p.next_same_raw_ < 0 ? nullptr : &all_[static_cast<std::size_t>(p.next_same_raw_)];
  }
  // The largest payload of any projection (to size output buffers).
  std::uint32_t max_payload_size() const { return max_payload_; }
  const std::vector<Projection>& projections() const { return all_; }
  // Position of `p` among projections() (the binding's index when the table
  // was built from a vector of bindings).
  std::size_t index_of(const Projection& p) const { return p.index_; }

  static constexpr int kMaxDenseId = 1 << 16;

 private:
  const Projection* find_sparse(int raw_id) const;
  void chain(int index);
  int read_type_slow(const std::uint8_t* raw) const;
  std::vector<Projection> all_;
  std::vector<int> dense_index_;            // raw id -> index into all_, or -1
  std::vector<const Projection*> dense_;    // the same as pointers (rebuilt by add())
  std::vector<std::pair<int, int>> sparse_;  // raw id, index into all_
  std::uint32_t max_payload_ = 0;
  std::uint32_t type_off_ = 0, type_size_ = 2;
};

// Writes one framed record (struct eventfs_record_header, the projected
// payload, zero padding to 8) at `out`, which must have room for
// record_size(p). Returns the bytes written.
// (Inline: they run once per record.)
inline std::uint32_t record_size(const Projection& p) { return EVENTFS_RECORD_SIZE(p.payload_size()); }
inline std::uint32_t write_record(const Projection& p, std::uint64_t ts, const std::uint8_t* raw,
                                  std::uint32_t len, std::uint8_t* out) {
  // The header's fields are stored into `out` one by one: a header built on
  // the stack and copied whole is read back before its field stores have
  // left the store buffer, a stall on every record.
  using H = eventfs_record_header;
  const std::uint32_t size = record_size(p), id = p.stable_id();
  const std::int32_t pid = p.pid(raw, len);
  const std::uint16_t version = EVENTFS_RECORD_VERSION, reserved = 0;
  __builtin_memcpy(out + offsetof(H, size), &size, sizeof size);
  __builtin_memcpy(out + offsetof(H, id), &id, sizeof id);
  __builtin_memcpy(out + offsetof(H, timestamp), &ts, sizeof ts);
  __builtin_memcpy(out + offsetof(H, pid), &pid, sizeof pid);
  __builtin_memcpy(out + offsetof(H, version), &version, sizeof version);
  __builtin_memcpy(out + offsetof(H, reserved), &reserved, sizeof reserved);
  const std::uint32_t end = static_cast<std::uint32_t>(sizeof(H)) + p.payload_size();
  p.project(raw, len, out + sizeof(H));
  for (std::uint32_t i = end; i < size; ++i) out[i] = 0;  // at most 7
  return size;
}
// A lost-events record (id EVENTFS_ID_LOST); always lost_record_size() bytes.
std::uint32_t lost_record_size();
std::uint32_t write_lost_record(std::uint64_t ts, std::uint64_t count, std::uint32_t cpu,
                                bool count_unknown, std::uint8_t* out);

}  // namespace eventfs
