// The files of the mount that are not streams: a constant text made once
// (ConstantFile) and a control file, read as a generated text and written one
// command a write (ControlFile), with what a write may leave held by its open
// (OpenHold).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "fs/file_contract.h"

namespace eventfs {

// A file whose text is generated on first use and then kept.
class ConstantFile final : public FileBehaviour {
 public:
  using Generator = std::function<int(std::string& out)>;
  explicit ConstantFile(std::string text);
  explicit ConstantFile(Generator gen);
  bool immutable() const override { return true; }
  int size(std::uint64_t& out) override;
  int open(int flags, std::unique_ptr<OpenFile>& out) override;
  int read(std::uint64_t offset, std::size_t count, std::string& out);

 private:
  int text(const std::string*& out);
  std::once_flag once_;
  Generator gen_;
  std::string text_;
  int error_ = 0;
};

// What a write left with one open of a control file (a held enable): kept
// until the open is released, then destroyed.
class OpenHold {
 public:
  virtual ~OpenHold() = default;
};

// A control file: its text is generated when a reader starts at offset 0 (as
// seq_file does), and each write(2) is one command.
class ControlFile final : public FileBehaviour {
 public:
  using Reader = std::function<int(std::string& out)>;
  using Writer = std::function<int(std::string_view data)>;
  // A writer that may leave a hold with the open it was written through
  // (`held` is that open's, empty until a write fills it).
  using HoldingWriter = std::function<int(std::string_view data, std::unique_ptr<OpenHold>& held)>;
  using Truncator = std::function<void()>;
  ControlFile(Reader r, Writer w, Truncator t = nullptr)
      : reader_(std::move(r)), writer_(std::move(w)), truncator_(std::move(t)) {}
  static std::shared_ptr<ControlFile> with_holds(Reader r, HoldingWriter w) {
    auto f = std::make_shared<ControlFile>(std::move(r), nullptr);
    f->holding_writer_ = std::move(w);
    return f;
  }
  bool immutable() const override { return false; }
  int size(std::uint64_t& out) override {
    out = 0;
    return 0;
  }
  int open(int flags, std::unique_ptr<OpenFile>& out) override;

 private:
  Reader reader_;
  Writer writer_;
  HoldingWriter holding_writer_;
  Truncator truncator_;
};

}  // namespace eventfs
