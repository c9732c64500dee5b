// Stream files (trace_pipe, per_cpu/cpuN/trace_pipe_raw): consuming, shared
// by all their opens, blocking without holding a thread. No FUSE here: the
// adapter hands in ReadCompletion and PollNotifier objects.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "fs/file_contract.h"

namespace eventfs {

// Where a stream's bytes come from (the record path).
class StreamChannel {
 public:
  virtual ~StreamChannel() = default;
  // Appends whole units (lines, records) of up to about `max` bytes to `out`;
  // at least one unit when any is available even if it is larger. False if
  // there is nothing to read now. Consuming.
  virtual bool take(std::size_t max, std::string& out) = 0;
  // As take(), without a copy: whole units of up to `max` bytes, consumed,
  // left where they lie for the caller to send with no lock held; the
  // source keeps those bytes in place until release(). False, and nothing
  // leased, when take() must make the bytes (a lost-events mark), when the
  // first unit is larger than `max`, while another lease of this source is
  // out, or when the source cannot.
  struct Lease {
    std::string_view parts[2];
    int n = 0;
  };
  virtual bool lease(std::size_t max, Lease& out) {
    (void)max;
    (void)out;
    return false;
  }
  virtual void release(const Lease& lease) { (void)lease; }
  // Whether take() would give something now (for poll; consumes nothing).
  virtual bool readable() = 0;
  // An errno while the source cannot deliver at all (the kernel's rings
  // cannot be read), else 0: a read with nothing to take gets it instead of
  // waiting, a poll POLLERR. The source calls data_ready() when it changes.
  virtual int error() { return 0; }
  // Readers come and go; the source reads the kernel only while there are some.
  virtual void reader_opened() {}
  virtual void reader_closed() {}
  // The reads and polls that are waiting for data_ready(), or about to look
  // whether they must (+1, before they look), went up or down by `delta`:
  // while none is, the source may leave data_ready() uncalled.
  virtual void waiting(int delta) { (void)delta; }
  // A read or poll was left waiting for data_ready() (after waiting(+1)).
  virtual void reader_parked() {}
};

class StreamFile final : public FileBehaviour,
                         public InterruptSink,
                         public std::enable_shared_from_this<StreamFile> {
 public:
  explicit StreamFile(std::shared_ptr<StreamChannel> channel) : channel_(std::move(channel)) {}
  bool immutable() const override { return false; }
  int size(std::uint64_t& out) override {
    out = 0;
    return 0;
  }
  int open(int flags, std::unique_ptr<OpenFile>& out) override;

  // New data (or an error) may be there: answer waiting readers and wake
  // pollers. Called by the source (any thread), with none of its locks held.
  void data_ready();
  // The mount is going away: every waiting and later read gets end of file.
  void end();
  // A waiting read (of any open of this file) was interrupted.
  void interrupt(const void* key) override;

 private:
  class Open;
  struct Waiter {
    Open* open;
    std::size_t count;
    std::unique_ptr<ReadCompletion> completion;
  };
  // A poll waiting to be woken: one an open at most (the kernel polls one
  // file handle again with a new notifier, and wakes every poller of the
  // file with any of them).
  struct Poller {
    Open* open;
    std::unique_ptr<PollNotifier> notifier;
  };
  // What a read is answered with, decided under mu_ and sent after it.
  struct Answer {
    int err = 0;
    bool leased = false;           // the bytes are `lease`'s, else `data`
    StreamChannel::Lease lease;
    std::string* data = nullptr;   // the open's buffer, or a spare (borrow())
    Open* lender = nullptr;        // the open whose buffer `data` is, until give_back()
  };
  // Takes for a read of `count` from `o`; false if there is nothing now.
  bool take_locked(Open& o, std::size_t count, Answer& a);
  void send(ReadCompletion& c, const Answer& a);
  // Makes the open's own buffer `a.data`, or false (nothing set) while
  // another answer of `o` uses it: the caller then gives a spare.
  // give_back() once the answer is sent: the open may be gone then if the
  // answer was made in a spare (its reader had its answer and closed),
  // never if in its buffer (~Open waits for it).
  static bool borrow(Open& o, Answer& a);
  static void give_back(Answer& a);
  void read(Open& o, std::size_t count, bool nonblock, std::unique_ptr<ReadCompletion> c);

  unsigned poll(Open& o, std::unique_ptr<PollNotifier> n);
  void closed(Open& o);

  std::shared_ptr<StreamChannel> channel_;
  std::mutex mu_;
  std::deque<Waiter> waiters_;
  std::vector<Poller> pollers_;
  bool ended_ = false;
};

}  // namespace eventfs
