// The contract the FUSE adapter (src/fuse/) drives and every file of the mount
// fulfils, independent of FUSE: what a file is (FileBehaviour), one open of it
// (OpenFile), and how a read that waits is answered (ReadCompletion), a poll
// woken (PollNotifier) and an interrupt delivered (InterruptSink). Every
// operation returns 0 or an errno.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace eventfs {

// The answer to a read that may wait (a stream): called exactly once, from
// whichever thread has the data, an error, or the interruption.
class ReadCompletion {
 public:
  virtual ~ReadCompletion() = default;
  virtual void done(int err, std::string_view data) = 0;
  // The data in pieces (answered without joining them where the transport
  // can: FUSE's writev); by default joined and given to done().
  virtual void done_parts(const std::string_view* parts, int n) {
    std::string all;
    for (int i = 0; i < n; ++i) all.append(parts[i]);
    done(0, all);
  }
  // Whether the reader has given up (a signal): then answer EINTR.
  virtual bool interrupted() const = 0;
  // Identifies the request, for interrupt().
  virtual const void* key() const = 0;
};

// Wakes a poll(2)/select(2)/epoll waiter once.
class PollNotifier {
 public:
  virtual ~PollNotifier() = default;
  virtual void notify() = 0;
};

// Where the interrupts of a file's waiting reads go. It lives as long as the
// mount: an open file may be released while an interrupt of one of its reads
// is being delivered on another thread.
class InterruptSink {
 public:
  virtual ~InterruptSink() = default;
  // The request `key` was interrupted: answer it with EINTR if it waits.
  virtual void interrupt(const void* key) = 0;
};

// One open of a file: reads and writes go here.
class OpenFile {
 public:
  virtual ~OpenFile() = default;
  virtual int read(std::uint64_t offset, std::size_t count, std::string& out) = 0;
  // tracefs answers a write to a read-only file with EINVAL.
  virtual int write(std::string_view data, std::uint64_t offset, std::size_t& written) {
    (void)data, (void)offset, (void)written;
    return EINVAL;
  }

  // Streams answer reads asynchronously: a read with no data waits without
  // holding a thread (nonblock: EAGAIN instead), and is answered when data
  // comes, when it is interrupted, or when the mount goes away.
  virtual bool is_stream() const { return false; }
  virtual void read_async(std::uint64_t offset, std::size_t count, bool /*nonblock*/,
                          std::unique_ptr<ReadCompletion> c) {
    std::string out;
    int e = read(offset, count, out);
    c->done(e, out);
  }
  // Where interrupts of its waiting reads go (nullptr: its reads never wait).
  virtual InterruptSink* interrupt_sink() { return nullptr; }
  // Returns the ready events (POLLIN...); keeps `n` to wake the poller later
  // when nothing is ready.
  virtual unsigned poll(std::unique_ptr<PollNotifier> n) {
    (void)n;
    return 0x001 | 0x004;  // POLLIN | POLLOUT: regular files are always ready
  }
};

// What a regular file does. Immutable files have contents fixed for the life
// of the mount, so the kernel may cache them; the others are read afresh.
class FileBehaviour {
 public:
  virtual ~FileBehaviour() = default;
  virtual bool immutable() const = 0;
  // Size reported by getattr: the real size for immutable files, 0 for
  // generated ones (as tracefs does).
  virtual int size(std::uint64_t& out) = 0;
  // `flags` are open(2)'s; O_TRUNC arrives here (atomic_o_trunc).
  virtual int open(int flags, std::unique_ptr<OpenFile>& out) = 0;
};

}  // namespace eventfs
