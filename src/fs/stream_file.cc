#include "fs/stream_file.h"

#include <malloc.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <thread>
#include <utility>
#include <vector>

namespace eventfs {

// One open: what it has taken but not yet been able to return (a unit
// larger than the read that took it), and the buffer its copied answers are
// made in.
class StreamFile::Open final : public OpenFile {
 public:
  explicit Open(std::shared_ptr<StreamFile> f) : file_(std::move(f)) { file_->channel_->reader_opened(); }
  ~Open() override {
    file_->closed(*this);
    file_->channel_->reader_closed();
    // An answer may still be on its way out of `buffer`: once it is handed
    // to the kernel its reader can close the file, and the release come,
    // before the answering thread has given the buffer back.
    while (lent.load(std::memory_order_acquire)) std::this_thread::yield();
    // A large buffer freed stays in the arena of the thread that grew it
    // (glibc trims an arena only past twice its largest mmap()ed chunk):
    // give its pages back to the system now.
    if (buffer.capacity() >= kTrimAfterBytes) {
      std::string().swap(buffer);
      (void)::malloc_trim(0);
    }
  }
  int read(std::uint64_t, std::size_t, std::string&) override { return EIO; }  // streams are async only
  bool is_stream() const override { return true; }
  void read_async(std::uint64_t, std::size_t count, bool nonblock, std::unique_ptr<ReadCompletion> c) override {
    file_->read(*this, count, nonblock, std::move(c));
  }
  InterruptSink* interrupt_sink() override { return file_.get(); }
  unsigned poll(std::unique_ptr<PollNotifier> n) override { return file_->poll(*this, std::move(n)); }

  std::string pending;
  // Reused by each read of this open that is answered with a copy: a read
  // allocates nothing (allocating and freeing a large buffer per read lets
  // glibc give the pages back and fault them in again, with TLB shootdowns,
  // on every read), and the memory is the open's, freed when it closes,
  // not kept by every thread that ever answered a read. `lent` while an
  // answer is made or sent from it; a second read of the open meanwhile
  // uses a buffer of its own.
  std::string buffer;
  std::atomic<bool> lent{false};
  static constexpr std::size_t kTrimAfterBytes = 128u << 10;

 private:
  std::shared_ptr<StreamFile> file_;
};

int StreamFile::open(int, std::unique_ptr<OpenFile>& out) {
  out = std::make_unique<Open>(shared_from_this());
  return 0;
}

bool StreamFile::take_locked(Open& o, std::size_t count, Answer& a) {
  a.leased = false;
  a.data->clear();
  if (o.pending.empty()) {  // the usual case
    // Whole units short of `count`, never exactly `count`: the kernel cuts a
    // read larger than one request (or from an unaligned buffer) into
    // requests and sends the next only when one comes back full, so a full
    // answer would let the next request take the first bytes of a record.
    const std::size_t max = count > 1 ? count - 1 : count;
    // Straight from where the source keeps the bytes (one copy fewer: the
    // kernel's, into the reader's buffer), else a copy.
    if (channel_->lease(max, a.lease)) return a.leased = true;
    if (!channel_->take(max, *a.data)) return false;
    if (a.data->size() > count) {  // a unit larger than the read: the rest is this open's
      o.pending.assign(*a.data, count);
      a.data->resize(count);
    }
    return true;
  }
  a.data->assign(o.pending, 0, count);
  o.pending.erase(0, std::min(count, o.pending.size()));
  return true;
}

void StreamFile::send(ReadCompletion& c, const Answer& a) {
  if (!a.leased) {
    c.done(a.err, a.err ? std::string_view() : std::string_view(*a.data));
    return;
  }
  struct Release {
    StreamChannel& channel;
    const StreamChannel::Lease& lease;
    ~Release() { channel.release(lease); }
  } release{*channel_, a.lease};
  c.done_parts(a.lease.parts, a.lease.n);
}

bool StreamFile::borrow(Open& o, Answer& a) {
  if (o.lent.exchange(true, std::memory_order_acquire)) return false;
  a.data = &o.buffer;
  a.lender = &o;
  return true;
}

void StreamFile::give_back(Answer& a) {
  if (Open* o = std::exchange(a.lender, nullptr)) o->lent.store(false, std::memory_order_release);
}

void StreamFile::read(Open& o, std::size_t count, bool nonblock, std::unique_ptr<ReadCompletion> c) {
  std::string spare;
  Answer a;
  if (!borrow(o, a)) a.data = &spare;
  struct GiveBack {
    Answer& a;
    ~GiveBack() { give_back(a); }
  } give_back_at_end{a};
  // Counted before it looks: records the source makes available after the
  // look are then told of (stream_file.h, waiting()).
  channel_->waiting(+1);
  {
    std::lock_guard lock(mu_);
    if (ended_) {
      // The mount is going away: end of file at once, records not yet read
      // are left; only the rest of a record this open has begun comes first.
      a.data->assign(o.pending, 0, count);
      o.pending.erase(0, a.data->size());
    } else if (!take_locked(o, count, a)) {
      if (int e = channel_->error()) {
        a.err = e;
      } else if (nonblock) {
        a.err = EAGAIN;
      } else if (c->interrupted()) {
        a.err = EINTR;
      } else {
        waiters_.push_back({&o, count, std::move(c)});
        channel_->reader_parked();
        return;
      }
    }
  }
  channel_->waiting(-1);
  send(*c, a);
}

void StreamFile::data_ready() {
  struct Ready {
    std::unique_ptr<ReadCompletion> completion;
    Answer answer;
  };
  std::vector<Ready> ready;
  std::deque<std::string> spares;  // (a deque keeps them in place)
  std::vector<Poller> pollers;
  {
    std::lock_guard lock(mu_);
    while (!waiters_.empty()) {
      Waiter& w = waiters_.front();
      Answer a;
      struct Unanswered {  // the buffer given back unless the answer is kept (a throw included)
        Answer* a;
        ~Unanswered() {
          if (a) give_back(*a);
        }
      } unanswered{&a};
      // (The waiting read's open's buffer: the open stays while its read waits.)
      if (!borrow(*w.open, a)) a.data = &spares.emplace_back();
      const bool answered = take_locked(*w.open, w.count, a) || (a.err = channel_->error()) != 0;
      if (!answered) break;
      ready.push_back({std::move(w.completion), a});
      unanswered.a = nullptr;
      waiters_.pop_front();
    }
    pollers.swap(pollers_);
  }
  channel_->waiting(-static_cast<int>(ready.size() + pollers.size()));
  for (auto& r : ready) {
    send(*r.completion, r.answer);
    give_back(r.answer);
  }
  for (auto& p : pollers) p.notifier->notify();
}

void StreamFile::end() {
  std::deque<Waiter> waiters;
  std::vector<Poller> pollers;
  {
    std::lock_guard lock(mu_);
    ended_ = true;
    waiters.swap(waiters_);
    pollers.swap(pollers_);
  }
  channel_->waiting(-static_cast<int>(waiters.size() + pollers.size()));
  for (auto& w : waiters) w.completion->done(0, {});
  for (auto& p : pollers) p.notifier->notify();
}

void StreamFile::interrupt(const void* key) {
  std::unique_ptr<ReadCompletion> c;
  {
    std::lock_guard lock(mu_);
    auto it = std::find_if(waiters_.begin(), waiters_.end(),
                           [key](const Waiter& w) { return w.completion->key() == key; });
    if (it == waiters_.end()) return;  // already answered
    c = std::move(it->completion);
    waiters_.erase(it);
  }
  channel_->waiting(-1);
  c->done(EINTR, {});
}

unsigned StreamFile::poll(Open& o, std::unique_ptr<PollNotifier> n) {
  channel_->waiting(+1);  // (as in read())
  unsigned events = 0;
  std::unique_ptr<PollNotifier> replaced;  // (destroyed with no lock held)
  {
    std::lock_guard lock(mu_);
    if (ended_)
      events = POLLIN | POLLHUP;
    else if (!o.pending.empty() || channel_->readable())
      events = POLLIN;
    else if (channel_->error())
      events = POLLERR;
    else if (n) {
      channel_->reader_parked();
      auto it = std::find_if(pollers_.begin(), pollers_.end(), [&o](const Poller& p) { return p.open == &o; });
      if (it == pollers_.end()) {
        pollers_.push_back({&o, std::move(n)});
        return 0;
      }
      replaced = std::exchange(it->notifier, std::move(n));  // (this open is counted once)
    }
  }
  channel_->waiting(-1);
  return events;
}

void StreamFile::closed(Open& o) {
  // The kernel does not release a file while one of its reads waits, but be
  // safe: answer anything of this open that still waits. A poll of it may
  // wait (a poll is no request the kernel keeps): it is dropped unwoken.
  std::vector<std::unique_ptr<ReadCompletion>> orphans;
  std::vector<Poller> polls;
  {
    std::lock_guard lock(mu_);
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->open == &o) {
        orphans.push_back(std::move(it->completion));
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
    auto gone = std::stable_partition(pollers_.begin(), pollers_.end(), [&o](const Poller& p) { return p.open != &o; });
    std::move(gone, pollers_.end(), std::back_inserter(polls));
    pollers_.erase(gone, pollers_.end());
  }
  channel_->waiting(-static_cast<int>(orphans.size() + polls.size()));
  for (auto& c : orphans) c->done(EINTR, {});
}

}  // namespace eventfs
