#include "ring/mapped_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

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
      nr_subbufs_(load(meta->nr_subbufs)),
      data_capacity_(subbuf_size_ > parser_.header_size() ? subbuf_size_ - parser_.header_size() : 0) {}

Result<std::size_t> MappedReader::drain(RingSink& sink, std::size_t max) {
  if (!started_) {
    started_ = true;
    cur_ = load(meta_->reader.id);
    from_ = load(meta_->reader.read);
    fresh_ = from_ == 0;
    // (A counter below the base was reset since, as writing the instance's
    // trace file does: what it counts was all overwritten while no stream
    // was open.)
    const std::uint64_t now = load(meta_->overrun);
    lost_.open(!has_base_ ? now : now < base_ ? 0 : base_);
  }
  std::size_t n = 0;
  bool asked_again = false;
  for (;;) {
    if (cur_ >= nr_subbufs_)
      return fail(EIO, fmt::format("the meta page names sub-buffer {} as the reader's, of {}", cur_, nr_subbufs_));
    const std::uint8_t* page = data_ + static_cast<std::size_t>(cur_) * subbuf_size_;
    // (The same sub-buffer as at the last drain: walked on from its place.)
    if (Status s = fresh_ ? parser_.load(page, subbuf_size_) : parser_.reload(page, subbuf_size_); !s)
      return fail(EIO, fmt::format("sub-buffer {}: {}", cur_, s.reason()));
    if (fresh_) {
      fresh_ = false;
      std::uint64_t overrun = load(meta_->overrun);
      lost_.subbuf(sink, stats_, parser_.timestamp(), parser_.missed(), &overrun, true);
    }
    std::size_t got = parser_.walk(sink, from_, max - n);
    n += got;
    stats_.entries += got;
    page_events_ += got;
    if (n >= max) return n;
    // The writer has left our sub-buffer (no event fits in what is left of
    // it), but when we last asked, less than a sub-buffer's worth waited
    // behind it: the next sub-buffer is the one the writer is filling, and
    // swapping it in now would hand over a part of it. While records are
    // coming (this drain delivered some) the swap waits for the next drain,
    // which makes it whatever it finds (it delivers nothing before it): the
    // records written on that sub-buffer by now wait as long as those the
    // writer adds after a catch-up do. Only once the kernel counts all we
    // delivered of ours as read: a reader opened after this one closes
    // starts where the kernel says.
    if (n > 0 && parser_.data_size() + kSmallestEvent > data_capacity_ && behind_ < page_events_ &&
        load(meta_->reader.read) >= from_)
      return n;
    if (Status swapped = get_reader_(ctx_); !swapped)
      return fail(swapped.code(), fmt::format("TRACE_MMAP_IOCTL_GET_READER: {}", swapped.reason()));
    ++stats_.swaps;
    const std::uint64_t written = load(meta_->entries), gone = load(meta_->overrun) + load(meta_->read);
    behind_ = written > gone ? written - gone : 0;
    std::uint32_t id = load(meta_->reader.id);
    if (id == cur_) {
      // The kernel kept our sub-buffer. Either the ring is empty (the writer
      // is still on our sub-buffer): caught up. What it appends (even what
      // it committed before this GET_READER, which the kernel now counts as
      // read) is walked at the next drain, from our own offset; chasing the
      // writer event by event costs a GET_READER (and the kernel's consuming
      // of each event) for a handful of records. Or our sub-buffer had
      // events the kernel did not count as read yet (the writer added them
      // after the last GET_READER, then moved on): this GET_READER only
      // counted them, and the ring behind may be full (a drainer that took
      // that for a catch-up would rest while the ring overran).
      // Then: walk those events and ask again, once.
      if (asked_again || behind_ == 0) return n;
      asked_again = true;
      continue;
    }
    cur_ = id;
    from_ = 0;
    fresh_ = true;
    page_events_ = 0;
  }
}

bool MappedReader::settled() const {
  if (!started_ || cur_ >= nr_subbufs_) return true;
  return parser_.committed(data_ + static_cast<std::size_t>(cur_) * subbuf_size_) <= from_;
}

RingStats MappedReader::stats() const {
  RingStats s = stats_;
  s.overrun = started_ ? lost_.growth(load(meta_->overrun)) : 0;
  s.overrun_counter = load(meta_->overrun);
  return s;
}

}  // namespace eventfs
