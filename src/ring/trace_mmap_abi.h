// The kernel's ring-buffer memory-mapping ABI (Linux >= 6.10), from
// include/uapi/linux/trace_mmap.h and Documentation/trace/ring-buffer-map.rst.
//
// Debian 12's linux-libc-dev (6.1) has no <linux/trace_mmap.h>, so when the
// build machine lacks it the ABI is declared here. The layout is the uapi one
// of 6.10 (struct trace_buffer_meta, TRACE_MMAP_IOCTL_GET_READER =
// _IO('R', 0x20)); the kernel only ever appends fields to the meta page and
// reports how long its struct is in meta_struct_len.
#pragma once

#include <sys/ioctl.h>

#include <cstddef>
#include <cstdint>

#if __has_include(<linux/trace_mmap.h>)
#include <linux/trace_mmap.h>
#endif

namespace eventfs::ring_abi {

// The meta page at offset 0 of the mapping of per_cpu/cpuN/trace_pipe_raw.
struct TraceBufferMeta {
  std::uint32_t meta_page_size;   // bytes of the meta page (the sub-buffers follow it)
  std::uint32_t meta_struct_len;  // bytes of this struct as the kernel fills it
  std::uint32_t subbuf_size;      // bytes of each sub-buffer, header included
  std::uint32_t nr_subbufs;       // sub-buffers in the ring, the reader's included
  struct {
    std::uint64_t lost_events;  // events lost at the time of the last reader swap
    std::uint32_t id;           // sub-buffer id of the reader: [0, nr_subbufs)
    std::uint32_t read;         // bytes of the reader's data the kernel counts as read
  } reader;
  std::uint64_t flags;    // 0 so far
  std::uint64_t entries;  // entries in the ring
  std::uint64_t overrun;  // entries lost (overwritten) in the ring
  std::uint64_t read;     // entries read
  std::uint64_t reserved1;
  std::uint64_t reserved2;
};

static_assert(sizeof(TraceBufferMeta) == 80);
static_assert(offsetof(TraceBufferMeta, reader) == 16);
static_assert(offsetof(TraceBufferMeta, overrun) == 48);

// Swaps in a new reader sub-buffer (or keeps the current one if it still has
// unread data, or the ring is empty) and refreshes the meta page.
inline constexpr unsigned long kGetReader = _IO('R', 0x20);

#ifdef TRACE_MMAP_IOCTL_GET_READER
static_assert(kGetReader == TRACE_MMAP_IOCTL_GET_READER);
static_assert(sizeof(struct trace_buffer_meta) == sizeof(TraceBufferMeta));
#endif

}  // namespace eventfs::ring_abi
