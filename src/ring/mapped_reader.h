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
//  * We walk it with kbuffer, remembering our own offset: the kernel's
//    reader.read is updated only by GET_READER, which counts everything
//    committed at that moment as read.
//  * When we have read it all we call GET_READER. The kernel then either
//    keeps the same reader (the ring is empty, or the writer is still
//    appending to the reader sub-buffer: we re-load it and go on from our
//    offset), or swaps in the next sub-buffer (a new id: start at 0).
//  * A new reader sub-buffer may carry the kernel's lost-events mark (flag
//    bits in its commit word, the count after its data when it fit). The
//    meta page's overrun counter counts the same losses; both are folded into
//    lost() reports at the start of the sub-buffer, never double counted:
//    the mark's count; overrun growth no mark has claimed one swap later (the
//    kernel attributes a loss to the next swap at the latest) as a report of
//    its own; for a mark without a count, the unclaimed overrun growth as the
//    count (flagged unknown).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ring/ring.h"
#include "ring/subbuf.h"
#include "ring/trace_mmap_abi.h"

namespace eventfs {

class MappedReader {
 public:
  using GetReaderFn = int (*)(void* ctx);  // 0 or -errno

  MappedReader(const ring_abi::TraceBufferMeta* meta, const std::uint8_t* data, unsigned long_size,
               GetReaderFn get_reader, void* ctx);

  int drain(RingSink& sink, std::size_t max_records);
  RingStats stats() const;
  std::uint32_t subbuf_size() const { return subbuf_size_; }

 private:
  void start_subbuf(RingSink& sink);
  void report(RingSink& sink, std::uint64_t ts, std::uint64_t count, bool unknown);

  const ring_abi::TraceBufferMeta* meta_;
  const std::uint8_t* data_;
  GetReaderFn get_reader_;
  void* ctx_;
  SubbufParser parser_;
  std::uint32_t subbuf_size_, nr_subbufs_;

  bool started_ = false;
  bool fresh_ = false;      // the current sub-buffer's lost mark is not accounted yet
  std::uint32_t cur_ = 0;   // reader sub-buffer id
  std::uint32_t from_ = 0;  // data bytes of it we have delivered

  // Lost-event accounting (see above).
  std::uint64_t overrun_open_ = 0, overrun_seen_ = 0;
  std::uint64_t pool_ = 0;    // overrun growth seen at the previous swap no mark has claimed
  std::uint64_t credit_ = 0;  // growth reported ahead of the next mark (in an estimate)
  RingStats stats_;
};

}  // namespace eventfs
