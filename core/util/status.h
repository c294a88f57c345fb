#pragma once
// Two kinds of failure (ARCHITECTURE.md): KILN_CHECK for our own bugs, and
// Status / Expected<T> for bad input. Deep inside kernels it is simpler to throw
// a kiln::Error; the op dispatcher and the file readers catch it at their
// boundary and hand the caller a Status, so bad input never escapes as a crash.
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace kiln {

// Where in an input file something went wrong. Empty file means "no file".
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;  // 1-based; 0 when the input has no columns
};

class Status {
 public:
  Status() = default;
  static Status error(std::string message, SourceLocation where = {}) {
    Status s;
    s.failed_ = true;
    s.message_ = std::move(message);
    s.where_ = std::move(where);
    return s;
  }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string& message() const { return message_; }
  const SourceLocation& where() const { return where_; }
  // "file:line: message", the form every command-line error takes.
  std::string to_string() const;

 private:
  bool failed_ = false;
  std::string message_;
  SourceLocation where_;
};

template <class T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Status error) : v_(std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(v_);
  }

 private:
  std::variant<T, Status> v_;
};

// A user error raised inside an op or reader; converted to Status at the boundary.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, SourceLocation where = {})
      : std::runtime_error(message), where_(std::move(where)) {}
  const SourceLocation& where() const { return where_; }
  Status to_status() const { return Status::error(what(), where_); }

 private:
  SourceLocation where_;
};

// An internal invariant broke: a bug in Kiln, not in the input.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const std::string& msg);

// Streams any number of values into one string; used by the macros below.
template <class... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

}  // namespace kiln

// Our bug: message, file, line; aborts in debug builds, throws InternalError in release.
#define KILN_CHECK(cond, ...)                                                       \
  do {                                                                              \
    if (!(cond)) [[unlikely]]                                                       \
      ::kiln::detail::check_failed(__FILE__, __LINE__, #cond,                       \
                                   ::kiln::detail::concat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)

// Bad input: throws kiln::Error with the streamed message.
#define KILN_USER_CHECK(cond, ...)                                                   \
  do {                                                                               \
    if (!(cond)) [[unlikely]]                                                        \
      throw ::kiln::Error(::kiln::detail::concat(__VA_ARGS__));                      \
  } while (0)

#define KILN_FAIL(...) throw ::kiln::Error(::kiln::detail::concat(__VA_ARGS__))
