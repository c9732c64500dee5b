// The one error convention of eventfs's code: an operation that can fail
// returns a Result<T> (a T, or an Error) or a Status (nothing, or an Error).
// An Error carries the errno a file-system caller is answered with and one
// line for a person (stderr, error_log or a test's failure). Exceptions stay
// inside the parsers that throw them and never cross a C callback; a bare
// errno appears only at the VFS edge (the file behaviours' read/write and
// the FUSE glue). A parser whose failures carry more than a line (a
// catalog's file:line, a filter's column for error_log's caret) returns a
// Result<T, ItsError> with its own error type, in the same shape.
#pragma once

#include <cerrno>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace eventfs {

struct Error {
  int code = EIO;      // an errno, never 0
  std::string reason;  // one line, no newline
};

inline Error fail(int code, std::string reason) { return Error{code ? code : EIO, std::move(reason)}; }

template <class T, class E = Error>
class [[nodiscard]] Result {
 public:
  template <class U = T>
    requires(std::is_constructible_v<T, U &&> && !std::is_same_v<std::remove_cvref_t<U>, E> &&
             !std::is_same_v<std::remove_cvref_t<U>, Result>)
  Result(U&& value) : v_(std::in_place_index<0>, std::forward<U>(value)) {}
  Result(E e) : v_(std::in_place_index<1>, std::move(e)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const& { return std::get<1>(v_); }
  E&& error() && { return std::get<1>(std::move(v_)); }
  // For Error (and error types with the same members).
  int code() const { return ok() ? 0 : error().code; }
  const std::string& reason() const {
    static const std::string none;
    return ok() ? none : error().reason;
  }

 private:
  std::variant<T, E> v_;
};

template <class E>
class [[nodiscard]] Result<void, E> {
 public:
  Result() = default;
  Result(E e) : error_(std::move(e)), failed_(true) {}

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const E& error() const& { return error_; }
  E&& error() && { return std::move(error_); }
  // For Error (and error types with the same members).
  int code() const { return failed_ ? error_.code : 0; }
  const std::string& reason() const { return error_.reason; }

 private:
  E error_{};
  bool failed_ = false;
};

using Status = Result<void>;

}  // namespace eventfs
