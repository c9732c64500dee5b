#include "projection/projection.h"

#include <algorithm>
#include <cstring>
#include <utility>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "eventfs/record.h"

namespace eventfs {
namespace {

inline std::uint64_t load_int(const std::uint8_t* p, unsigned size, bool sgn) {
  switch (size) {
    case 1: {
      std::uint8_t v;
      std::memcpy(&v, p, 1);
      return sgn ? static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int8_t>(v))) : v;
    }
    case 2: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return sgn ? static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int16_t>(v))) : v;
    }
    case 4: {
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      return sgn ? static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int32_t>(v))) : v;
    }
    default: {
      std::uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

inline void store_int(std::uint8_t* p, unsigned size, std::uint64_t v) {
  switch (size) {
    case 1: { auto x = static_cast<std::uint8_t>(v); std::memcpy(p, &x, 1); break; }
    case 2: { auto x = static_cast<std::uint16_t>(v); std::memcpy(p, &x, 2); break; }
    case 4: { auto x = static_cast<std::uint32_t>(v); std::memcpy(p, &x, 4); break; }
    default: std::memcpy(p, &v, 8); break;
  }
}

#ifdef __SSE2__
using projection_detail::str16;
#endif

// Writes dst[0, m): at most m-1 bytes of src (of which `avail` belong to
// the string), up to the first NUL, then NULs. `readable`: bytes of the
// record from src on (>= avail), which allows 16-byte loads (char[16],
// char[32], ...) where the record has the bytes.
inline void copy_string(const std::uint8_t* src, std::size_t avail, std::size_t readable, std::uint8_t* dst,
                        std::size_t m) {
#ifdef __SSE2__
  if (m == 16 && readable >= 16) {
    str16(src, dst, static_cast<unsigned>(std::min<std::size_t>(avail, 15)));
    return;
  }
  if (m > 16 && m % 8 == 0) return projection_detail::str_m8(src, avail, readable, dst, m);
#endif
  (void)readable;
  if (m == 0) return;
  std::size_t lim = std::min(avail, m - 1);
  const void* nul = std::memchr(src, 0, lim);
  std::size_t n = nul ? static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - src) : lim;
  std::memcpy(dst, src, n);
  std::memset(dst + n, 0, m - n);
}

// Resolves a __data_loc/__rel_loc word into [off, off+size) within the record;
// false if the word itself is out of the record. The range is clamped.
inline bool dyn_range(const std::uint8_t* raw, std::uint32_t len, std::uint32_t field_off, bool rel,
                      std::uint32_t& off, std::uint32_t& size) {
  if (field_off + 4u > len) return false;
  std::uint32_t w;
  std::memcpy(&w, raw + field_off, 4);
  off = (w & 0xffffu) + (rel ? field_off + 4u : 0u);
  size = w >> 16;
  if (off >= len) return false;
  size = std::min(size, len - off);
  return true;
}

std::uint16_t u16(std::size_t v) { return static_cast<std::uint16_t>(std::min<std::size_t>(v, 0xffff)); }

}  // namespace

Projection Projection::compile(const Binding& b) {
  Projection p;
  p.binding_ = &b;
  p.raw_id_ = b.raw.id;
  p.stable_id_ = b.event ? b.event->id : 0;
  p.payload_size_ = static_cast<std::uint32_t>(b.layout.size);
  for (const auto& c : b.raw.common_fields) {
    if (c.name == "common_pid" && (c.size == 1 || c.size == 2 || c.size == 4 || c.size == 8)) {
      p.pid_off_ = u16(c.offset);
      p.pid_size_ = static_cast<std::uint8_t>(c.size);
    }
  }
  p.ops_.reserve(b.fields.size());
  for (const auto& f : b.fields) {
    const FormatField& d = f.stable->decl;
    const RawField& r = f.raw;
    Op op{};
    op.src_size = static_cast<std::uint8_t>(r.elem_bytes);
    op.dst_size = static_cast<std::uint8_t>(d.type.bytes());
    op.src_signed = r.is_signed;
    op.src_off = u16(r.offset);
    op.dst_off = u16(f.slot.offset);
    op.dst_count = u16(d.shape == FieldShape::Array ? d.count : 1);
    switch (f.conversion) {
      case Conversion::Integer:
        op.kind = OpKind::Int;
        if (op.src_size == op.dst_size) {
          switch (op.src_size) {
            case 1: op.kind = OpKind::Copy1; break;
            case 2: op.kind = OpKind::Copy2; break;
            case 4: op.kind = OpKind::Copy4; break;
            case 8: op.kind = OpKind::Copy8; break;
          }
        }
        op.src_count = 1;
        break;
      case Conversion::IntegerArray:
        if (r.shape == FieldShape::Array) {
          op.kind = OpKind::IntArray;
          op.src_count = u16(r.count);
        } else if (r.shape == FieldShape::DynArray && r.loc != DynLoc::Tail) {
          op.kind = OpKind::IntDynArray;
          op.aux = r.loc == DynLoc::RelLoc;
        } else {  // a tail array of integers: as many as the record holds
          op.kind = OpKind::IntArray;
          op.src_count = 0xffff;
        }
        break;
      case Conversion::Bytes:
        if (r.shape == FieldShape::Array) {
          op.kind = f.slot.size == 16 && r.size >= 16 ? OpKind::Str16 : OpKind::BytesFixed;
          op.src_count = u16(r.size);
        } else if (r.loc == DynLoc::DataLoc) {
          op.kind = OpKind::BytesDataLoc;
        } else if (r.loc == DynLoc::RelLoc) {
          op.kind = OpKind::BytesRelLoc;
        } else {
          op.kind = OpKind::BytesTail;
        }
        op.dst_count = u16(f.slot.size);
        break;
      case Conversion::TaskState: {
        StateTable t;
        bool bits = true;
        int last_bit = -1;
        for (const auto& [value, letters] : f.states) {
          if (value == 0) continue;
          char letter = letters.empty() ? '?' : letters[0];
          t.entries.emplace_back(value, letter);
          int bit = __builtin_ctzll(value);
          if ((value & (value - 1)) != 0 || bit <= last_bit) bits = false;
          if (bits) {
            t.mask |= value;
            t.by_bit[static_cast<std::size_t>(bit)] = letter;
            last_bit = bit;
          }
        }
        op.kind = bits ? OpKind::TaskStateBits : OpKind::TaskStateTable;
        op.src_count = 1;
        op.aux = static_cast<std::uint32_t>(p.states_.size());
        p.states_.push_back(std::move(t));
        break;
      }
    }
    p.ops_.push_back(op);
  }
  // The padding no field covers, as Zero ops; then all in offset order.
  std::vector<bool> covered(p.payload_size_, false);
  for (const auto& f : b.fields)
    for (std::size_t i = f.slot.offset; i < f.slot.offset + f.slot.size && i < covered.size(); ++i) covered[i] = true;
  for (std::size_t i = 0; i < covered.size();) {
    if (covered[i]) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < covered.size() && !covered[j]) ++j;
    Op z{};
    z.kind = OpKind::Zero;
    z.dst_off = u16(i);
    z.dst_count = u16(j - i);
    p.ops_.push_back(z);
    i = j;
  }
  std::stable_sort(p.ops_.begin(), p.ops_.end(), [](const Op& a, const Op& b) { return a.dst_off < b.dst_off; });
  // Batch the common ops (at most 255 of a kind; the rest stay checked).
  std::array<std::vector<Move>, kBatches> batches;
  for (const Op& op : p.ops_) {
    int kind = -1;
    std::uint32_t end = op.src_off;
    switch (op.kind) {
      case OpKind::Str16: kind = kStr16; end += 16; break;
      case OpKind::Copy4: kind = kCopy4; end += 4; break;
      case OpKind::Copy8: kind = kCopy8; end += 8; break;
      case OpKind::Copy2: kind = kCopy2; end += 2; break;
      case OpKind::Copy1: kind = kCopy1; end += 1; break;
      case OpKind::TaskStateBits:
        if (op.dst_size == 1) kind = kState;
        end += op.src_size;
        break;
      case OpKind::Zero:  // as one 8-byte store inside the payload
        if (op.dst_count <= 8 && p.payload_size_ >= 8) kind = kZero;
        end = 0;
        break;
      default: break;
    }
#ifdef __SSE2__
    if (op.kind == OpKind::BytesTail && op.dst_count > 16 && op.dst_count % 8 == 0) {
      p.tails_.push_back(op);
      continue;
    }
#else
    if (kind == kStr16) kind = -1;
#endif
    if (kind < 0 || batches[static_cast<std::size_t>(kind)].size() == 255) {
      p.rest_.push_back(op);
      continue;
    }
    Move m{op.src_off, op.dst_off, static_cast<std::uint16_t>(op.aux), op.src_size};
    if (kind == kZero) m.src = u16(std::min<std::uint32_t>(op.dst_off, p.payload_size_ - 8));
    batches[static_cast<std::size_t>(kind)].push_back(m);
    p.fixed_end_ = std::max(p.fixed_end_, end);
  }
  for (std::size_t k = 0; k < batches.size(); ++k) {
    p.nfast_[k] = static_cast<std::uint8_t>(batches[k].size());
    p.fast_.insert(p.fast_.end(), batches[k].begin(), batches[k].end());
  }
  p.fixed_fn_ = fixed_fn_for(p.nfast_);
  p.more_ = !p.tails_.empty() || !p.rest_.empty();
  return p;
}

// The fast path of project() for S16 str16, C4 copy4, C8 copy8, ST state and
// Z zero moves (and no copy2 or copy1), in fast_'s order: the loops have
// constant trip counts, so this is the straight-line code one would write
// by hand for the event.
template <int S16, int C4, int C8, int ST, int Z>
void Projection::run_fixed(const Projection& p, const std::uint8_t* __restrict raw, std::uint8_t* __restrict out) {
  const Move* m = p.fast_.data();
  const Move* z = m + S16 + C4 + C8 + ST;
  for (int i = 0; i < Z; ++i) {
    std::uint64_t zero = 0;
    std::memcpy(out + z[i].src, &zero, 8);
  }
#ifdef __SSE2__
  for (int i = 0; i < S16; ++i) str16(raw + m[i].src, out + m[i].dst, 15);
#endif
  m += S16;
  for (int i = 0; i < C4; ++i) std::memcpy(out + m[i].dst, raw + m[i].src, 4);
  m += C4;
  for (int i = 0; i < C8; ++i) std::memcpy(out + m[i].dst, raw + m[i].src, 8);
  m += C8;
  for (int i = 0; i < ST; ++i) {
    const StateTable& t = p.states_[m[i].aux];
    std::uint64_t v = projection_detail::load_uint(raw + m[i].src, m[i].size) & t.mask;
    out[m[i].dst] = static_cast<std::uint8_t>(v ? t.by_bit[static_cast<std::size_t>(__builtin_ctzll(v))] : 'R');
  }
}

namespace {
constexpr int kMaxS16 = 2, kMaxC4 = 4, kMaxC8 = 2, kMaxST = 1, kMaxZ = 2;
constexpr int fixed_index(int s16, int c4, int c8, int st, int z) {
  return (((s16 * (kMaxC4 + 1) + c4) * (kMaxC8 + 1) + c8) * (kMaxST + 1) + st) * (kMaxZ + 1) + z;
}
constexpr int kFixedShapes = fixed_index(kMaxS16, kMaxC4, kMaxC8, kMaxST, kMaxZ) + 1;
}  // namespace

Projection::FixedFn Projection::fixed_fn_for(const std::array<std::uint8_t, kBatches>& n) {
#ifndef __SSE2__
  if (n[kStr16]) return nullptr;
#endif
  if (std::all_of(n.begin(), n.end(), [](std::uint8_t c) { return c == 0; })) return nullptr;  // nothing to run
  if (n[kCopy2] || n[kCopy1] || n[kStr16] > kMaxS16 || n[kCopy4] > kMaxC4 || n[kCopy8] > kMaxC8 ||
      n[kState] > kMaxST || n[kZero] > kMaxZ)
    return nullptr;
  static const auto table = []<int... I>(std::integer_sequence<int, I...>) {
    // Index I -> the shape's counts, as fixed_index() lays them out.
    return std::array<FixedFn, sizeof...(I)>{
        &run_fixed<I / ((kMaxC4 + 1) * (kMaxC8 + 1) * (kMaxST + 1) * (kMaxZ + 1)),
                   I / ((kMaxC8 + 1) * (kMaxST + 1) * (kMaxZ + 1)) % (kMaxC4 + 1),
                   I / ((kMaxST + 1) * (kMaxZ + 1)) % (kMaxC8 + 1), I / (kMaxZ + 1) % (kMaxST + 1),
                   I % (kMaxZ + 1)>...};
  }(std::make_integer_sequence<int, kFixedShapes>{});
  return table[static_cast<std::size_t>(fixed_index(n[kStr16], n[kCopy4], n[kCopy8], n[kState], n[kZero]))];
}

void Projection::run_op(const Op& op, const std::uint8_t* raw, std::uint32_t len, std::uint8_t* out) const {
  std::uint8_t* dst = out + op.dst_off;
  const std::uint32_t src_off = op.src_off;
  switch (op.kind) {
    case OpKind::Copy1:
      *dst = src_off + 1 <= len ? raw[src_off] : 0;
      return;
    case OpKind::Copy2:
      if (src_off + 2 <= len) std::memcpy(dst, raw + src_off, 2);
      else std::memset(dst, 0, 2);
      return;
    case OpKind::Copy4:
      if (src_off + 4 <= len) std::memcpy(dst, raw + src_off, 4);
      else std::memset(dst, 0, 4);
      return;
    case OpKind::Copy8:
      if (src_off + 8 <= len) std::memcpy(dst, raw + src_off, 8);
      else std::memset(dst, 0, 8);
      return;
    case OpKind::Int:
      store_int(dst, op.dst_size, src_off + op.src_size <= len ? load_int(raw + src_off, op.src_size, op.src_signed) : 0);
      return;
    case OpKind::Str16:
#ifdef __SSE2__
      if (src_off + 16 <= len) {
        str16(raw + src_off, dst, 15);
        return;
      }
#endif
      [[fallthrough]];
    case OpKind::BytesFixed:
      if (src_off < len) {
        std::uint32_t readable = len - src_off;
        copy_string(raw + src_off, std::min<std::uint32_t>(op.src_count, readable), readable, dst, op.dst_count);
      } else {
        std::memset(dst, 0, op.dst_count);
      }
      return;
    case OpKind::BytesDataLoc:
    case OpKind::BytesRelLoc: {
      std::uint32_t off, size;
      if (dyn_range(raw, len, src_off, op.kind == OpKind::BytesRelLoc, off, size))
        copy_string(raw + off, size, len - off, dst, op.dst_count);
      else
        std::memset(dst, 0, op.dst_count);
      return;
    }
    case OpKind::BytesTail:
      if (src_off < len) copy_string(raw + src_off, len - src_off, len - src_off, dst, op.dst_count);
      else std::memset(dst, 0, op.dst_count);
      return;
    case OpKind::TaskStateBits: {
      std::uint64_t c = 0;
      if (src_off + op.src_size <= len) {
        const StateTable& t = states_[op.aux];
        std::uint64_t m = load_int(raw + src_off, op.src_size, false) & t.mask;
        c = static_cast<std::uint8_t>(m ? t.by_bit[static_cast<std::size_t>(__builtin_ctzll(m))] : 'R');
      }
      store_int(dst, op.dst_size, c);
      return;
    }
    case OpKind::TaskStateTable: {
      std::uint64_t c = 0;
      if (src_off + op.src_size <= len) {
        std::uint64_t v = load_int(raw + src_off, op.src_size, false);  // state bits: no sign
        c = 'R';
        for (const auto& [mask, letter] : states_[op.aux].entries)
          if ((v & mask) == mask) {
            c = static_cast<std::uint8_t>(letter);
            break;
          }
      }
      store_int(dst, op.dst_size, c);
      return;
    }
    case OpKind::Zero:
      for (std::uint32_t i = 0; i < op.dst_count; ++i) dst[i] = 0;
      return;
    case OpKind::IntArray: {
      std::uint32_t n = std::min<std::uint32_t>(op.src_count, op.dst_count);
      n = src_off < len ? std::min<std::uint32_t>(n, (len - src_off) / op.src_size) : 0;
      for (std::uint32_t i = 0; i < n; ++i)
        store_int(dst + i * op.dst_size, op.dst_size,
                  load_int(raw + src_off + i * op.src_size, op.src_size, op.src_signed));
      std::memset(dst + n * op.dst_size, 0, (op.dst_count - n) * op.dst_size);
      return;
    }
    case OpKind::IntDynArray: {
      std::uint32_t off = 0, size = 0, n = 0;
      if (dyn_range(raw, len, src_off, op.aux != 0, off, size)) n = std::min<std::uint32_t>(size / op.src_size, op.dst_count);
      for (std::uint32_t i = 0; i < n; ++i)
        store_int(dst + i * op.dst_size, op.dst_size,
                  load_int(raw + off + i * op.src_size, op.src_size, op.src_signed));
      std::memset(dst + n * op.dst_size, 0, (op.dst_count - n) * op.dst_size);
      return;
    }
  }
}

void Projection::project_checked(const std::uint8_t* raw, std::uint32_t len, std::uint8_t* out) const {
  for (const Op& op : ops_) run_op(op, raw, len, out);
}

void Projection::project_rest(const std::uint8_t* raw, std::uint32_t len, std::uint8_t* out) const {
  for (const Op& op : rest_) run_op(op, raw, len, out);
}

std::int32_t Projection::pid_other_size(const std::uint8_t* raw) const {
  return static_cast<std::int32_t>(load_int(raw + pid_off_, pid_size_, true));
}

ProjectionTable::ProjectionTable(const std::vector<Binding>& bindings) {
  all_.reserve(bindings.size());
  for (const auto& b : bindings) add(b);
}

void ProjectionTable::add(const Binding& b) {
  if (all_.empty()) {
    for (const auto& c : b.raw.common_fields)
      if (c.name == "common_type" && (c.size == 1 || c.size == 2 || c.size == 4)) {
        type_off_ = c.offset;
        type_size_ = c.size;
      }
  }
  int index = static_cast<int>(all_.size());
  all_.push_back(Projection::compile(b));
  Projection& p = all_.back();
  p.index_ = static_cast<std::size_t>(index);
  max_payload_ = std::max(max_payload_, p.payload_size());
  if (p.raw_id() >= 0) chain(index);
  // all_ may have moved: the pointers are made afresh.
  dense_.assign(dense_index_.size(), nullptr);
  for (std::size_t i = 0; i < dense_index_.size(); ++i)
    if (dense_index_[i] >= 0) dense_[i] = &all_[static_cast<std::size_t>(dense_index_[i])];
}

// Makes all_[index] findable by its raw id: the first of its raw id, or
// the last in that raw id's chain.
void ProjectionTable::chain(int index) {
  const int id = all_[static_cast<std::size_t>(index)].raw_id();
  int* head = nullptr;
  if (id < kMaxDenseId) {
    if (dense_index_.size() <= static_cast<std::size_t>(id)) dense_index_.resize(static_cast<std::size_t>(id) + 1, -1);
    head = &dense_index_[static_cast<std::size_t>(id)];
  } else {
    auto it = std::lower_bound(sparse_.begin(), sparse_.end(), std::make_pair(id, -1));
    if (it == sparse_.end() || it->first != id) it = sparse_.insert(it, {id, -1});
    head = &it->second;
  }
  if (*head < 0) {
    *head = index;
  } else {
    Projection* q = &all_[static_cast<std::size_t>(*head)];
    while (q->next_same_raw_ >= 0) q = &all_[static_cast<std::size_t>(q->next_same_raw_)];
    q->next_same_raw_ = index;
  }
}

const Projection* ProjectionTable::find_sparse(int raw_id) const {
  auto it = std::lower_bound(sparse_.begin(), sparse_.end(), std::make_pair(raw_id, -1));
  if (it == sparse_.end() || it->first != raw_id || it->second < 0) return nullptr;
  return &all_[static_cast<std::size_t>(it->second)];
}

int ProjectionTable::read_type_slow(const std::uint8_t* raw) const {
  return static_cast<int>(load_int(raw + type_off_, type_size_, false) & 0x7fffffff);
}

std::uint32_t lost_record_size() { return EVENTFS_RECORD_SIZE(sizeof(eventfs_lost)); }

std::uint32_t write_lost_record(std::uint64_t ts, std::uint64_t count, std::uint32_t cpu,
                                bool count_unknown, std::uint8_t* out) {
  eventfs_record_header h;
  h.size = lost_record_size();
  h.id = EVENTFS_ID_LOST;
  h.timestamp = ts;
  h.pid = 0;
  h.version = EVENTFS_RECORD_VERSION;
  h.reserved = 0;
  eventfs_lost l;
  l.count = count;
  l.cpu = cpu;
  l.flags = count_unknown ? EVENTFS_LOST_COUNT_UNKNOWN : 0;
  std::memcpy(out, &h, sizeof h);
  std::memcpy(out + sizeof h, &l, sizeof l);
  return h.size;
}

}  // namespace eventfs
