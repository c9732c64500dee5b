// How long a reader thread of eventfs-record lets records gather in
// eventfs's queues before it reads them. Each read of a stream is a FUSE
// round trip (two context switches, the request and the reply), whatever it
// carries: read as soon as poll(2) says a record is there, a busy stream
// costs a round trip for every few records the daemon hands on at a time
// (eventfs-record(1), NOTES, has figures). trace-cmd record waits likewise,
// for the kernel ring to be half full (buffer_percent). A recording needs no
// record early; what it needs is that eventfs's queue never fills meanwhile:
// the wait is sized from the rate the stream came at, for about kTarget
// bytes a read, and is at most kMaxWait.
//
// Pure: the caller passes the time in and says what it read.
#pragma once

#include <chrono>
#include <cstddef>

namespace eventfs::recorder {

class ReadPacing {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kTarget = 512 * 1024;  // half a read buffer (ReaderThreads::kReadSize)
  static constexpr std::chrono::milliseconds kMaxWait{50};

  // The thread's streams have just been read empty at `now`; `most` is the
  // most bytes one stream gave since the last time they were all empty.
  void caught_up(Clock::time_point now, std::size_t most);
  // What to wait once poll(2) says a stream has records, before reading:
  // what kTarget bytes take at the last rate, at most kMaxWait; kMaxWait
  // before any rate is known, or when the streams gave nothing.
  Clock::duration wait() const { return wait_; }

 private:
  bool started_ = false;
  Clock::time_point last_{};
  Clock::duration wait_ = kMaxWait;
};

}  // namespace eventfs::recorder
