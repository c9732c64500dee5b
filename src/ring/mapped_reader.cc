#include "ring/mapped_reader.h"

#include <algorithm>
#include <cerrno>

namespace eventfs {
namespace {

template <typename T>
T load(const T& field) {
  return __atomic_load_n(&field, __ATOMIC_ACQUIRE);
}

}  // namespace

MappedReader::MappedReader(const ring_abi::TraceBufferMeta* meta, const std::uint8_t* data,
                           unsigned long_size, GetReaderFn get_reader, void* ctx)
    : meta_(meta),
      data_(data),
      get_reader_(get_reader),
      ctx_(ctx),
      parser_(long_size),
      subbuf_size_(load(meta->subbuf_size)),
      nr_subbufs_(load(meta->nr_subbufs)) {}

void MappedReader::report(RingSink& sink, std::uint64_t ts, std::uint64_t count, bool unknown) {
  sink.lost(ts, count, unknown);
  stats_.lost += count;
  ++stats_.lost_reports;
}

// Called once per reader sub-buffer, before its first record.
//
// With O_S the overrun counter we sample right after swap S, the kernel's
// mark k_S counts the losses between swap S-1 and swap S, which overlap the
// growth O_{S-1} - O_{S-2} (the part after swap S-1) and O_S - O_{S-1} (the
// part before swap S). So k_S first claims what is left of the previous
// growth (pool_), then the new growth; what the previous growth still holds
// after that was never marked (a commit overrun) and is reported on its own.
void MappedReader::start_subbuf(RingSink& sink) {
  ++stats_.subbufs;
  std::uint64_t overrun = load(meta_->overrun);
  std::uint64_t fresh = overrun - overrun_seen_;
  overrun_seen_ = overrun;
  std::int64_t mark = parser_.missed();
  std::uint64_t ts = parser_.timestamp();
  if (mark < 0) {
    // Marked without a count: estimate it from the overrun counter. Part of
    // `fresh` may be claimed by the next mark; that one is reduced by it.
    ++stats_.unknown_lost;
    report(sink, ts, pool_ + fresh, true);
    pool_ = 0;
    credit_ = fresh;
    return;
  }
  std::uint64_t k = static_cast<std::uint64_t>(mark);
  std::uint64_t ahead = std::min(k, credit_);
  credit_ = 0;
  k -= ahead;
  if (k > 0) report(sink, ts, k, false);
  std::uint64_t take = std::min(k, pool_);
  pool_ -= take;
  k -= take;
  if (pool_ > 0) report(sink, ts, pool_, false);
  pool_ = fresh - std::min(k, fresh);
}

int MappedReader::drain(RingSink& sink, std::size_t max) {
  if (!started_) {
    started_ = true;
    cur_ = load(meta_->reader.id);
    from_ = load(meta_->reader.read);
    fresh_ = from_ == 0;
    overrun_open_ = overrun_seen_ = load(meta_->overrun);
  }
  std::size_t n = 0;
  for (;;) {
    if (cur_ >= nr_subbufs_) return -EIO;
    const std::uint8_t* page = data_ + static_cast<std::size_t>(cur_) * subbuf_size_;
    if (!parser_.load(page, subbuf_size_)) return -EIO;
    if (fresh_) {
      fresh_ = false;
      start_subbuf(sink);
    }
    std::size_t got = parser_.walk(sink, from_, max - n);
    n += got;
    stats_.entries += got;
    if (n >= max) return 0;
    if (int rc = get_reader_(ctx_); rc < 0) return rc;
    std::uint32_t id = load(meta_->reader.id);
    if (id == cur_) {
      // The ring is empty, or the writer is still on our sub-buffer.
      if (!parser_.load(page, subbuf_size_)) return -EIO;
      if (parser_.data_size() <= from_) return 0;
      continue;
    }
    cur_ = id;
    from_ = 0;
    fresh_ = true;
  }
}

RingStats MappedReader::stats() const {
  RingStats s = stats_;
  s.overrun = started_ ? load(meta_->overrun) - overrun_open_ : 0;
  return s;
}

}  // namespace eventfs
