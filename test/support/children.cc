// Child processes and threads that block in read(2) on a stream.
#include "support/children.h"

namespace eventfs_it::stream {

Children::~Children() {
  // A reader the daemon never answers stays until the mount ends.
  KillAll(SIGKILL, 1s);
  for (auto& k : kids_) {
    if (k.out >= 0) ::close(k.out);
    if (k.err >= 0) ::close(k.err);
  }
}

pid_t Children::SpawnCat(const std::string& path) {
  int out = make_capture_fd("cat-out");
  int err = make_capture_fd("cat-err");
  pid_t pid = spawn({"/bin/cat", path}, out, err);
  kids_.push_back({pid, out, err, std::nullopt});
  return pid;
}

bool Children::WaitAllInRead(std::chrono::milliseconds limit) {
  return wait_until(
      [&] {
        for (auto& k : kids_)
          if (k.status || !in_read_syscall(k.pid)) return false;
        return true;
      },
      limit);
}

std::size_t Children::CountBlocked() {
  Reap();
  std::size_t n = 0;
  for (auto& k : kids_)
    if (!k.status && in_read_syscall(k.pid)) ++n;
  return n;
}

std::optional<int> Children::Wait(std::size_t i, std::chrono::milliseconds limit) {
  Kid& k = kids_[i];
  if (k.status) return k.status;
  int st = 0;
  if (wait_exit(k.pid, limit, st)) k.status = st;
  return k.status;
}

void Children::Signal(std::size_t i, int sig) {
  if (!kids_[i].status) ::kill(kids_[i].pid, sig);
}

bool Children::KillAll(int sig, std::chrono::milliseconds limit) {
  for (auto& k : kids_)
    if (!k.status) ::kill(k.pid, sig);
  auto deadline = Clock::now() + limit;
  bool all = true;
  for (std::size_t i = 0; i < kids_.size(); ++i) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (!Wait(i, std::max(left, 0ms))) all = false;
  }
  return all;
}

void Children::Reap() {
  for (auto& k : kids_) {
    if (k.status) continue;
    int st = 0;
    if (::waitpid(k.pid, &st, WNOHANG) == k.pid) k.status = st;
  }
}

ThreadedRead::ThreadedRead(int fd, std::size_t size) : st_(std::make_shared<State>()) {
  st_->fd = fd;
  thread_ = std::thread([st = st_, size] {
    st->tid = current_tid();
    std::vector<char> buf(size);
    ssize_t n = ::read(st->fd, buf.data(), buf.size());
    int e = errno;
    std::lock_guard lock(st->mu);
    st->n = n;
    st->err = e;
    if (n > 0) st->data.assign(buf.data(), static_cast<std::size_t>(n));
    st->done = true;
    if (st->abandoned) ::close(st->fd);
  });
}

bool ThreadedRead::Wait(std::chrono::milliseconds limit) {
  return wait_until([&] { return st_->done.load(); }, limit);
}

std::string ThreadedRead::data() {
  std::lock_guard lock(st_->mu);
  return st_->data;
}

bool ThreadedRead::Finish(const std::function<void()>& release, std::chrono::milliseconds limit) {
  if (!thread_.joinable()) return joined_;
  if (!st_->done && release) release();
  if (Wait(limit)) {
    thread_.join();
    joined_ = true;
    return true;
  }
  {
    std::lock_guard lock(st_->mu);
    if (!st_->done) st_->abandoned = true;
  }
  if (st_->done) {
    thread_.join();
    joined_ = true;
    return true;
  }
  thread_.detach();
  return false;
}

std::string describe_status(std::optional<int> st) {
  if (!st) return "still running";
  if (WIFEXITED(*st)) return "exit " + std::to_string(WEXITSTATUS(*st));
  if (WIFSIGNALED(*st)) return std::string("killed by ") + strsignal(WTERMSIG(*st));
  return "status " + std::to_string(*st);
}

}  // namespace eventfs_it::stream
