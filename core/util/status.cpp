#include "core/util/status.h"

#include <cstdio>
#include <cstdlib>

namespace kiln {

std::string Status::to_string() const {
  if (ok()) return "ok";
  if (where_.file.empty()) return message_;
  if (where_.line > 0 && where_.column > 0)
    return where_.file + ":" + std::to_string(where_.line) + ":" + std::to_string(where_.column) + ": " + message_;
  if (where_.line > 0) return where_.file + ":" + std::to_string(where_.line) + ": " + message_;
  return where_.file + ": " + message_;
}

namespace detail {
void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  std::string text = std::string("internal error at ") + file + ":" + std::to_string(line) +
                     ": check `" + cond + "` failed" + (msg.empty() ? "" : ": " + msg);
#ifndef NDEBUG
  std::fprintf(stderr, "%s\n", text.c_str());
  std::abort();
#else
  throw InternalError(text);
#endif
}
}  // namespace detail

}  // namespace kiln
