#include "fuse/session_loop.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace eventfs {
namespace {

// The write end of the pipe the background parent waits on; -1 once told.
int ready_fd = -1;

// The shutdown signals that were not ignored when the daemon started (a
// background job of a non-interactive shell ignores SIGINT, and keeps doing
// so, as with libfuse's own handlers); set by block_shutdown_signals().
sigset_t shutdown_set;

sigset_t shutdown_signals() { return shutdown_set; }

// Sent to the loop's thread to end a blocking wait (EINTR) once the session is
// marked exited; the handler itself does nothing.
constexpr int kWakeSignal = SIGUSR2;
void on_wake(int) {}

void redirect_to_null(std::initializer_list<int> fds) {
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0) return;
  for (int fd : fds) dup2(null, fd);
  close(null);
}

}  // namespace

void daemonize_until_served(bool foreground) {
  if (foreground) return;
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "eventfs: cannot go to the background: %s\n", std::strerror(errno));
    std::exit(1);
  }
  pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "eventfs: cannot go to the background: %s\n", std::strerror(errno));
    std::exit(1);
  }
  if (pid > 0) {
    // The parent: what the child owns (the mount, the instance) is not its to
    // clean up, so it leaves with _exit.
    close(p[1]);
    char c = 0;
    ssize_t n;
    do n = read(p[0], &c, 1);
    while (n < 0 && errno == EINTR);
    if (n == 1) _exit(0);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    _exit(WIFEXITED(st) && WEXITSTATUS(st) != 0 ? WEXITSTATUS(st) : 1);
  }
  close(p[0]);
  ready_fd = p[1];
  setsid();
  if (chdir("/") != 0) {
    // Paths are absolute by now; a daemon kept in its directory still works.
  }
  redirect_to_null({STDIN_FILENO});
}

void serving_started() {
  int fd = std::exchange(ready_fd, -1);
  if (fd < 0) return;
  redirect_to_null({STDOUT_FILENO, STDERR_FILENO});
  char c = '1';
  if (write(fd, &c, 1) != 1) {
    // The parent is gone; nothing waits for the answer.
  }
  close(fd);
}

void block_shutdown_signals() {
  sigemptyset(&shutdown_set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) sigaddset(&shutdown_set, sig);
  }
  pthread_sigmask(SIG_BLOCK, &shutdown_set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

void destroy_session(fuse_session* se) {
  pollfd pfd{fuse_session_fd(se), 0, 0};
  if (pfd.fd >= 0 && poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLERR)) fuse_session_unmount(se);
  fuse_session_destroy(se);
}

SessionLoop::SessionLoop(fuse_session* se, std::function<void()> shut_down, std::chrono::milliseconds grace)
    : se_(se), shut_down_(std::move(shut_down)), grace_(grace) {
  struct sigaction sa {};
  sa.sa_handler = on_wake;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: the wait it interrupts must return
  sigaction(kWakeSignal, &sa, nullptr);
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  signals_ = std::thread([this] { watch_signals(); });
  supervisor_ = std::thread([this] { supervise(); });
}

SessionLoop::~SessionLoop() {
  {
    std::lock_guard lock(mu_);
    loop_done_ = true;
  }
  cv_.notify_all();
  std::uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof one) != sizeof one) {
    // An eventfd write of 1 cannot fail short of overflow.
  }
  signals_.join();
  supervisor_.join();
  close(stop_fd_);
}

void SessionLoop::request_shutdown() {
  if (requested_.exchange(true)) return;
  std::lock_guard lock(mu_);
  cv_.notify_all();
}

void SessionLoop::watch_signals() {
  sigset_t s = shutdown_signals();
  int sfd = signalfd(-1, &s, SFD_CLOEXEC);
  if (sfd < 0) return;
  for (;;) {
    pollfd fds[2] = {{sfd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents) break;
    signalfd_siginfo si;
    if (read(sfd, &si, sizeof si) == sizeof si) request_shutdown();
  }
  close(sfd);
}

void SessionLoop::supervise() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return requested_.load() || loop_done_; });
  if (!requested_) return;  // the loop ended on its own (the connection went)
  lock.unlock();
  shut_down_();
  lock.lock();
  if (cv_.wait_for(lock, grace_, [this] { return loop_done_; })) return;
  // Someone keeps a file open without reading it: end the loop anyway. Its
  // thread may be about to wait when the signal comes, so it is sent again
  // until the loop has ended.
  fuse_session_exit(se_);
  while (!loop_done_) {
    if (running_) pthread_kill(loop_thread_, kWakeSignal);
    cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return loop_done_; });
  }
}

int SessionLoop::run(bool single_thread, unsigned max_threads) {
  sigset_t wake;
  sigemptyset(&wake);
  sigaddset(&wake, kWakeSignal);
  pthread_sigmask(SIG_UNBLOCK, &wake, nullptr);
  {
    std::lock_guard lock(mu_);
    loop_thread_ = pthread_self();
    running_ = true;
  }
  int rc;
  if (single_thread) {
    rc = fuse_session_loop(se_);
  } else {
    fuse_loop_config* cfg = fuse_loop_cfg_create();
    fuse_loop_cfg_set_clone_fd(cfg, 0);
    fuse_loop_cfg_set_max_threads(cfg, max_threads);
    rc = fuse_session_loop_mt(se_, cfg);
    fuse_loop_cfg_destroy(cfg);
  }
  {
    std::lock_guard lock(mu_);
    running_ = false;
    loop_done_ = true;
  }
  cv_.notify_all();
  return rc;
}

}  // namespace eventfs
