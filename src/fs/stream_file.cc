#include "fs/stream_file.h"

#include <poll.h>

#include <algorithm>
#include <vector>

namespace eventfs {

// One open: what it has taken but not yet been able to return (a unit
// larger than the read that took it).
class StreamFile::Open final : public OpenFile {
 public:
  explicit Open(std::shared_ptr<StreamFile> f) : file_(std::move(f)) { file_->channel_->reader_opened(); }
  ~Open() override {
    file_->closed(*this);
    file_->channel_->reader_closed();
  }
  int read(std::uint64_t, std::size_t, std::string&) override { return EIO; }  // streams are async only
  bool is_stream() const override { return true; }
  void read_async(std::uint64_t, std::size_t count, bool nonblock, std::unique_ptr<ReadCompletion> c) override {
    file_->read(*this, count, nonblock, std::move(c));
  }
  InterruptSink* interrupt_sink() override { return file_.get(); }
  unsigned poll(std::unique_ptr<PollNotifier> n) override { return file_->poll(*this, std::move(n)); }

  std::string pending;

 private:
  std::shared_ptr<StreamFile> file_;
};

int StreamFile::open(int, std::unique_ptr<OpenFile>& out) {
  out = std::make_unique<Open>(shared_from_this());
  return 0;
}

bool StreamFile::take_locked(Open& o, std::size_t count, std::string& out) {
  out.clear();
  if (o.pending.empty()) {  // the usual case: straight into `out`
    // Whole units short of `count`, never exactly `count`: the kernel cuts a
    // read larger than one request (or from an unaligned buffer) into
    // requests and sends the next only when one comes back full, so a full
    // answer would let the next request take the first bytes of a record.
    if (!channel_->take(count > 1 ? count - 1 : count, out)) return false;
    if (out.size() > count) {  // a unit larger than the read: the rest is this open's
      o.pending.assign(out, count);
      out.resize(count);
    }
    return true;
  }
  out.assign(o.pending, 0, count);
  o.pending.erase(0, std::min(count, o.pending.size()));
  return true;
}

bool StreamFile::take_in_place(Open& o, std::size_t count, ReadCompletion& c) {
  // As take_locked(), answered straight from where the source keeps the
  // bytes (one copy fewer: the kernel's, into the reader's buffer).
  if (!o.pending.empty()) return false;
  return channel_->take_parts(count > 1 ? count - 1 : count,
                              [&c](const std::string_view* parts, int n) { c.done_parts(parts, n); });
}

void StreamFile::read(Open& o, std::size_t count, bool nonblock, std::unique_ptr<ReadCompletion> c) {
  // Reused by each thread: a read allocates nothing (allocating and freeing
  // a large buffer per read lets glibc give the pages back and fault them
  // in again, with TLB shootdowns, on every read).
  thread_local std::string out;
  {
    std::lock_guard lock(mu_);
    if (ended_) {
      // The mount is going away: end of file at once, records not yet read
      // are left; only the rest of a record this open has begun comes first.
      out.assign(o.pending, 0, count);
      o.pending.erase(0, out.size());
      c->done(0, out);
      return;
    }
    if (take_in_place(o, count, *c)) return;
    bool have = take_locked(o, count, out);
    if (!have) {
      if (int e = channel_->error()) {
        c->done(e, {});
      } else if (nonblock) {
        c->done(EAGAIN, {});
      } else if (c->interrupted()) {
        c->done(EINTR, {});
      } else {
        waiters_.push_back({&o, count, std::move(c)});
      }
      return;
    }
  }
  c->done(0, out);
}

void StreamFile::data_ready() {
  struct Answer {
    std::unique_ptr<ReadCompletion> completion;
    int err;
  };
  std::vector<Answer> answers;
  thread_local std::vector<std::string> data;  // reused, as in read()
  std::vector<std::unique_ptr<PollNotifier>> pollers;
  {
    std::lock_guard lock(mu_);
    while (!waiters_.empty()) {
      Waiter& w = waiters_.front();
      if (take_in_place(*w.open, w.count, *w.completion)) {
        waiters_.pop_front();
        continue;
      }
      if (data.size() <= answers.size()) data.emplace_back();
      int err = 0;
      if (!take_locked(*w.open, w.count, data[answers.size()]) && (err = channel_->error()) == 0) break;
      answers.push_back({std::move(w.completion), err});
      waiters_.pop_front();
    }
    pollers.swap(pollers_);
  }
  for (std::size_t i = 0; i < answers.size(); ++i)
    answers[i].completion->done(answers[i].err, answers[i].err ? std::string_view() : data[i]);
  for (auto& p : pollers) p->notify();
}

void StreamFile::end() {
  std::deque<Waiter> waiters;
  std::vector<std::unique_ptr<PollNotifier>> pollers;
  {
    std::lock_guard lock(mu_);
    ended_ = true;
    waiters.swap(waiters_);
    pollers.swap(pollers_);
  }
  for (auto& w : waiters) w.completion->done(0, {});
  for (auto& p : pollers) p->notify();
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
  c->done(EINTR, {});
}

unsigned StreamFile::poll(Open& o, std::unique_ptr<PollNotifier> n) {
  std::lock_guard lock(mu_);
  if (ended_) return POLLIN | POLLHUP;
  if (!o.pending.empty() || channel_->readable()) return POLLIN;
  if (channel_->error()) return POLLERR;
  if (n) pollers_.push_back(std::move(n));
  return 0;
}

void StreamFile::closed(Open& o) {
  // The kernel does not release a file while one of its reads waits, but be
  // safe: answer anything of this open that still waits.
  std::vector<std::unique_ptr<ReadCompletion>> orphans;
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
  }
  for (auto& c : orphans) c->done(EINTR, {});
}

}  // namespace eventfs
