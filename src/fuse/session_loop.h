// Running the FUSE session: a start in the background whose exit status says
// whether the mount is served, and a shutdown that answers every reader (end
// of file) before the connection goes.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace eventfs {

// Unless `foreground`: forks, and the parent waits. It exits 0 once the child
// calls serving_started() (the kernel's INIT is answered: the mount is
// served), else with the child's exit status (1 if it was killed), so status 0
// always means mounted. The child starts its own session, moves to / and
// keeps standard error until then, so that a failure before it still gives
// its one line. Returns in the child, or at once in the foreground.
void daemonize_until_served(bool foreground);
// Tells the waiting parent the mount is served and detaches the standard
// streams. Only the first call counts; nothing in the foreground.
void serving_started();

// SIGTERM, SIGINT and SIGHUP are blocked in the calling thread and so in every
// thread it starts later: a SessionLoop takes them. SIGPIPE is ignored.
void block_shutdown_signals();

// Ends a session whose loop has returned: closes the FUSE device and frees
// the session. libfuse keeps its copy of the mount point until
// fuse_session_unmount(), which unmounts by path (and so would take a mount
// made on that path since); it is called only once the kernel has ended the
// connection (the device polls POLLERR), when all it does is close and free.
// Otherwise the copy (a few bytes) stays until the process exits, and the
// kernel ends the connection when the device closes.
void destroy_session(fuse_session* se);

class SessionLoop {
 public:
  // `shut_down` runs once, on the loop's shutdown thread, when one of the
  // shutdown signals arrives or request_shutdown() is called: it ends the
  // streams (waiting and later reads get end of file) and takes the mount
  // away. The loop meanwhile goes on answering requests, until the kernel ends
  // the connection (the last open file is closed) or `grace` has passed.
  SessionLoop(fuse_session* se, std::function<void()> shut_down, std::chrono::milliseconds grace);
  ~SessionLoop();
  SessionLoop(const SessionLoop&) = delete;
  SessionLoop& operator=(const SessionLoop&) = delete;

  // Serves until the end; libfuse's result (0 when the connection ended).
  int run(bool single_thread, unsigned max_threads);
  // From any thread; the first call starts the shutdown.
  void request_shutdown();
  bool shutdown_requested() const { return requested_; }

 private:
  void watch_signals();
  void supervise();

  fuse_session* se_;
  std::function<void()> shut_down_;
  std::chrono::milliseconds grace_;
  pthread_t loop_thread_{};
  int stop_fd_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> requested_{false};
  bool loop_done_ = false;  // guarded by mu_
  bool running_ = false;    // guarded by mu_: loop_thread_ is in the loop
  std::thread signals_, supervisor_;
};

}  // namespace eventfs
