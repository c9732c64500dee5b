// The consumer side of the ring-buffer mapping protocol
// (Documentation/trace/ring-buffer-map.rst), over memory the caller mapped:
// the meta page and the sub-buffers, and a callback that issues
// TRACE_MMAP_IOCTL_GET_READER. Separate from the file and mmap handling so a
// test can play the kernel.
//
// The protocol as eventfs uses it:
//  * The sub-buffer meta->reader.id (at data + id * subbuf_size) is ours to
//    read. At the first drain, meta->reader.read bytes of it were already
//    consumed (by an earlier reader); we start there.
//  * We walk it (SubbufParser), remembering our own offset: the kernel's
//    reader.read is updated only by GET_READER, which counts everything
//    committed at that moment as read.
//  * When we have read it all we call GET_READER, except where it would
//    hand over the sub-buffer the writer is filling, part-filled: when the
//    writer has left ours (no event fits in what is left of it) and the
//    meta page said, at the last GET_READER, that less than a sub-buffer's
//    worth of events waited behind ours, and the kernel counts every event
//    of ours we delivered as read. A drain that delivered records then
//    stops there; the next drain asks first thing (so the swap waits one
//    drain at most). The kernel counts a swapped-in sub-buffer's events
//    as read one by one in GET_READER whatever their number, so the swap of
//    a part-filled one costs the GET_READERs that count the events the
//    writer adds to it later.
//  * At GET_READER the kernel either keeps the same reader (the ring is
//    empty, or the writer is still appending to the reader sub-buffer: we
//    stop there, and the next drain re-loads it and goes on from our
//    offset), or swaps in the next sub-buffer (a new id: start at 0). It also keeps the same reader, only
//    counting its events as read, when the reader had events it had not
//    counted yet (appended after the last GET_READER): then the meta page
//    says the ring holds more (entries > overrun + read), and we walk the
//    reader's new events and call GET_READER again.
//  * A new reader sub-buffer may carry the kernel's lost-events mark; it and
//    the meta page's overrun counter (sampled right after each GET_READER)
//    are folded into lost() reports by LostAccounting (ring/lost.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ring/lost.h"
#include "ring/ring.h"
#include "ring/subbuf.h"
#include "ring/trace_mmap_abi.h"

namespace eventfs {

class MappedReader {
 public:
  // Asks the kernel for the next reader sub-buffer; on failure the errno
  // and its description.
  using GetReaderFn = Status (*)(void* ctx);

  MappedReader(const ring_abi::TraceBufferMeta* meta, const std::uint8_t* data, unsigned long_size,
               GetReaderFn get_reader, void* ctx);

  Result<std::size_t> drain(RingSink& sink, std::size_t max_records);
  // See CpuRing::count_losses_from (by default: the counter at the first drain).
  void count_losses_from(std::uint64_t overrun) {
    base_ = overrun;
    has_base_ = true;
  }
  RingStats stats() const;
  std::uint32_t subbuf_size() const { return subbuf_size_; }
  // False when the reader sub-buffer holds committed events past those
  // walked (see CpuRing::settled).
  bool settled() const;

 private:
  const ring_abi::TraceBufferMeta* meta_;
  const std::uint8_t* data_;
  GetReaderFn get_reader_;
  void* ctx_;
  // The kernel's smallest event (RB_EVNT_MIN_SIZE): a writer moves on from
  // a sub-buffer with less room left than this (it pads the rest).
  static constexpr std::uint32_t kSmallestEvent = 8;

  SubbufParser parser_;
  std::uint32_t subbuf_size_, nr_subbufs_;
  std::uint32_t data_capacity_;  // bytes of events a sub-buffer holds

  bool started_ = false;
  bool has_base_ = false;
  std::uint64_t base_ = 0;
  bool fresh_ = false;      // the current sub-buffer's lost mark is not accounted yet
  std::uint32_t cur_ = 0;   // reader sub-buffer id
  std::uint32_t from_ = 0;  // data bytes of it we have delivered
  std::uint64_t page_events_ = 0;  // events of it we have delivered
  // Events in the ring behind the reader sub-buffer at the last GET_READER
  // (the meta page's entries - overrun - read); unknown before the first.
  std::uint64_t behind_ = UINT64_MAX;

  LostAccounting lost_;
  RingStats stats_;
};

}  // namespace eventfs
