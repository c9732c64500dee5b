#include "fs/simple_files.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>

namespace eventfs {

ConstantFile::ConstantFile(std::string text) : text_(std::move(text)) {
  std::call_once(once_, [] {});
}

ConstantFile::ConstantFile(Generator gen) : gen_(std::move(gen)) {}

int ConstantFile::text(const std::string*& out) {
  std::call_once(once_, [this] { error_ = gen_(text_); });
  out = &text_;
  return error_;
}

int ConstantFile::size(std::uint64_t& out) {
  const std::string* t = nullptr;
  if (int e = text(t)) return e;
  out = t->size();
  return 0;
}

int ConstantFile::read(std::uint64_t offset, std::size_t count, std::string& out) {
  const std::string* t = nullptr;
  if (int e = text(t)) return e;
  if (offset >= t->size()) {
    out.clear();
    return 0;
  }
  out = t->substr(offset, count);
  return 0;
}

namespace {

class ConstantOpen final : public OpenFile {
 public:
  explicit ConstantOpen(ConstantFile& f) : f_(f) {}
  int read(std::uint64_t offset, std::size_t count, std::string& out) override {
    return f_.read(offset, count, out);
  }

 private:
  ConstantFile& f_;
};

// One open of a control file. Several threads may read one open file at
// once (pread(2) on a shared descriptor): the text a reader at offset 0
// generates replaces the kept one under the lock, and each read copies from
// the kept text under the same lock.
class ControlOpen final : public OpenFile {
 public:
  ControlOpen(const ControlFile::Reader& r, const ControlFile::Writer& w, const ControlFile::HoldingWriter& hw)
      : reader_(r), writer_(w), holding_writer_(hw) {}
  int read(std::uint64_t offset, std::size_t count, std::string& out) override {
    std::lock_guard lock(mu_);
    if (offset == 0 || !have_) {
      std::string fresh;
      if (int e = reader_(fresh)) return e;
      text_ = std::move(fresh);
      have_ = true;
    }
    out = offset < text_.size() ? text_.substr(offset, count) : std::string();
    return 0;
  }
  int write(std::string_view data, std::uint64_t, std::size_t& written) override {
    if (holding_writer_) {
      std::lock_guard lock(hold_mu_);
      if (int e = holding_writer_(data, held_)) return e;
    } else {
      if (!writer_) return EINVAL;
      if (int e = writer_(data)) return e;
    }
    written = data.size();
    return 0;
  }

 private:
  const ControlFile::Reader& reader_;
  const ControlFile::Writer& writer_;
  const ControlFile::HoldingWriter& holding_writer_;
  std::mutex hold_mu_;  // one write at a time may fill held_
  std::unique_ptr<OpenHold> held_;  // guarded by hold_mu_; ends with the open
  std::mutex mu_;
  std::string text_;  // guarded by mu_
  bool have_ = false;  // guarded by mu_
};

}  // namespace

int ConstantFile::open(int, std::unique_ptr<OpenFile>& out) {
  out = std::make_unique<ConstantOpen>(*this);
  return 0;
}

int ControlFile::open(int flags, std::unique_ptr<OpenFile>& out) {
  if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && truncator_) truncator_();
  out = std::make_unique<ControlOpen>(reader_, writer_, holding_writer_);
  return 0;
}

}  // namespace eventfs
