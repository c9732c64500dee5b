#include "recorder/dat_cpu_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "recorder/dat_format.h"
#include "recorder/write_all.h"

namespace eventfs::recorder {

DatCpuWriter::DatCpuWriter(const MountLayout& layout, const std::map<std::uint32_t, std::uint16_t>& ids,
                           std::size_t page_size)
    : ids_(ids), page_size_(page_size), page_(page_size), names_(layout) {
  out_.reserve(page_size * kPagesPerWrite);
}

DatCpuWriter::~DatCpuWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Status DatCpuWriter::open(const std::string& path) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    int e = errno;
    return fail(e, fmt::format("cannot create {}: {}", path, std::strerror(e)));
  }
  return {};
}

Status DatCpuWriter::add_event(std::uint64_t timestamp, std::uint32_t id, std::int32_t pid, const void* payload,
                               std::size_t size, std::size_t end, std::size_t /*align*/) {
  auto it = ids_.find(id);
  if (it == ids_.end()) return {};
  // The payload after the common fields, padded to 8 bytes as the
  // daemon's records are.
  const std::size_t padded = (end + 7) / 8 * 8;
  const std::size_t len = kDatCommonSize + padded;
  scratch_.assign(len, 0);
  const std::uint16_t type = it->second;
  std::memcpy(scratch_.data(), &type, 2);
  std::memcpy(scratch_.data() + 4, &pid, 4);
  std::memcpy(scratch_.data() + kDatCommonSize, payload, std::min(size, padded));
  names_.note(id, pid, static_cast<const unsigned char*>(payload), size);
  if (page_.add(timestamp, scratch_.data(), len)) return {};
  if (Status s = end_page(); !s) return s;
  if (page_.add(timestamp, scratch_.data(), len)) return {};
  return fail(EMSGSIZE, fmt::format("{}: an event of {} bytes does not fit a page of {}", path_, len, page_size_));
}

Status DatCpuWriter::add_lost(std::uint64_t timestamp, std::uint64_t count) {
  if (page_.events() != 0)
    if (Status s = end_page(); !s) return s;
  page_.set_missed(timestamp, count);
  return {};
}

Status DatCpuWriter::finish() {
  if (fd_ < 0) return {};
  if (!page_.empty())
    if (Status s = end_page(); !s) return s;
  Status s = write_out();
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  return s;
}

Status DatCpuWriter::end_page() {
  const auto& page = page_.finish();
  out_.insert(out_.end(), page.begin(), page.end());
  page_.reset();
  if (out_.size() >= page_size_ * kPagesPerWrite) return write_out();
  return {};
}

Status DatCpuWriter::write_out() {
  if (fd_ < 0) {
    out_.clear();
    return fail(EBADF, fmt::format("{} is closed after an error", path_));
  }
  if (Status s = write_all(fd_, out_.data(), out_.size(), path_); !s) {
    // Keep only whole pages.
    [[maybe_unused]] int t = ::ftruncate(fd_, static_cast<off_t>(file_size_));
    ::close(fd_);
    fd_ = -1;
    out_.clear();
    return s;
  }
  file_size_ += out_.size();
  out_.clear();
  return {};
}

}  // namespace eventfs::recorder
