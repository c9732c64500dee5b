// The record path's hub when the kernel's rings cannot be read: stream
// readers are told (EIO, a POLLERR poll) instead of waiting forever, and the
// reason is reported once. Runs over a directory with no per_cpu/ in it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "../fixture_kernels.h"
#include "fs/stream_file.h"
#include "stream/stream_hub.h"

namespace eventfs {
namespace {

using testing::ResolvedFixture;
using namespace std::chrono_literals;

class Completion final : public ReadCompletion {
 public:
  Completion(std::atomic<int>& err, std::atomic<bool>& answered) : err_(err), answered_(answered) {}
  void done(int err, std::string_view) override {
    err_ = err;
    answered_ = true;
  }
  bool interrupted() const override { return false; }
  const void* key() const override { return this; }

 private:
  std::atomic<int>& err_;
  std::atomic<bool>& answered_;
};

bool wait_for(const std::atomic<bool>& flag, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!flag && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(5ms);
  return flag;
}

TEST(StreamHub, ReadersGetEioWhenTheRingsCannotBeOpened) {
  ResolvedFixture fx("linux-6.18");
  char dir[] = "/tmp/eventfs-hub-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  {
    StreamHub hub(dir, 2, fx.resolution, ReaderMode::Read);
    auto file = std::make_shared<StreamFile>(hub.text_channel());
    hub.on_data([file] { file->data_ready(); });
    std::atomic<int> reports{0};
    std::string reason;
    hub.on_ring_error([&](const std::string& why) {
      if (reports++ == 0) reason = why;
    });
    hub.start();

    std::unique_ptr<OpenFile> f;
    ASSERT_EQ(file->open(O_RDONLY, f), 0);
    std::atomic<int> err{-1};
    std::atomic<bool> answered{false};
    f->read_async(0, 4096, false, std::make_unique<Completion>(err, answered));
    ASSERT_TRUE(wait_for(answered, 3s)) << "a blocked reader was never told";
    EXPECT_EQ(err, EIO);
    EXPECT_EQ(reports, 1);
    EXPECT_NE(reason.find("trace_pipe_raw"), std::string::npos) << reason;

    // Later reads, blocking or not, and polls get the error at once.
    std::atomic<bool> again{false};
    f->read_async(0, 4096, false, std::make_unique<Completion>(err, again));
    EXPECT_TRUE(again);
    EXPECT_EQ(err, EIO);
    EXPECT_EQ(f->poll(nullptr) & POLLERR, static_cast<unsigned>(POLLERR));
    f.reset();
    hub.stop();
  }
  rmdir(dir);
}

}  // namespace
}  // namespace eventfs
