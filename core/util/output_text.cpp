#include "core/util/output_text.h"

#include <iostream>
#include <streambuf>

#include <nlohmann/json.hpp>

#include "core/util/utf8.h"

namespace kiln {

namespace {

// `prefix`, then the byte as two lowercase hex digits (the \x1b and \u0085 forms).
void append_hex_escape(std::string& out, const char* prefix, unsigned char c) {
  static const char* const hex = "0123456789abcdef";
  out += prefix;
  out += hex[c >> 4];
  out += hex[c & 15];
}

}  // namespace

std::string json_text(const nlohmann::json& j, int indent) {
  const std::string raw = j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
  // DEL and the C1 controls are legal raw in JSON strings (they can only be
  // inside strings here) but a terminal obeys them: written as \u escapes,
  // the text is the same JSON and has no control bytes left.
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto c = static_cast<unsigned char>(raw[i]);
    if (c == 0x7F) {
      append_hex_escape(out, "\\u00", c);
    } else if (c == 0xC2 && i + 1 < raw.size() && static_cast<unsigned char>(raw[i + 1]) < 0xA0 &&
               static_cast<unsigned char>(raw[i + 1]) >= 0x80) {
      append_hex_escape(out, "\\u00", static_cast<unsigned char>(raw[++i]));
    } else {
      out += char(c);
    }
  }
  return out;
}

namespace {

// The length of the UTF-8 sequence at `s[i]`, or 0 where it is not one
// (overlong forms, surrogates and code points past U+10FFFF included).
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n;
  char32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7F)) {
      out += char(c);
      ++i;
      continue;
    }
    const size_t n = c < 0x80 ? 0 : utf8_sequence(text, i);
    // U+0080..U+009F are the C1 controls (0x9b is CSI on some terminals).
    if (n == 0 || (n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0)) {
      append_hex_escape(out, "\\x", c);
      ++i;
      continue;
    }
    out.append(text, i, n);
    i += n;
  }
  return out;
}

namespace {

// Holds back a partial UTF-8 sequence until the rest arrives, so a character
// written in two pieces is judged whole; whole lines go out at once.
struct SafeSink {
  FILE* target;
  std::string pending;

  void drain(bool all) {
    size_t keep = 0;
    if (!all) {
      for (size_t back = 1; back <= 3 && back <= pending.size(); ++back) {
        const auto c = static_cast<unsigned char>(pending[pending.size() - back]);
        if ((c & 0xC0) == 0x80) continue;
        if (utf8_lead_length(c) > back) keep = back;
        break;
      }
    }
    const std::string safe = terminal_safe(std::string_view(pending).substr(0, pending.size() - keep));
    std::fwrite(safe.data(), 1, safe.size(), target);
    // The C and C++ streams share `target`; flushing keeps exit() from dropping a tail.
    std::fflush(target);
    pending.erase(0, pending.size() - keep);
  }
  void write(const char* s, size_t n) {
    pending.append(s, n);
    if (pending.find('\n') != std::string::npos) drain(pending.back() == '\n');
    else if (pending.size() >= 4096) drain(false);
  }
};

ssize_t cookie_write(void* cookie, const char* s, size_t n) {
  static_cast<SafeSink*>(cookie)->write(s, n);
  return ssize_t(n);
}

int cookie_close(void* cookie) {
  static_cast<SafeSink*>(cookie)->drain(true);
  return 0;
}

struct SafeBuf : std::streambuf {
  explicit SafeBuf(SafeSink& sink) : sink(sink) {}
  SafeSink& sink;
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) {
      const char ch = char(c);
      sink.write(&ch, 1);
    }
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    sink.write(s, size_t(n));
    return n;
  }
  int sync() override {
    sink.drain(true);
    return 0;
  }
};

FILE* safe_file(SafeSink& sink) {
  cookie_io_functions_t io{};
  io.write = cookie_write;
  io.close = cookie_close;
  FILE* f = fopencookie(&sink, "w", io);
  if (f) std::setvbuf(f, nullptr, _IOLBF, 4096);
  return f;
}

}  // namespace

void make_stdio_terminal_safe() {
  // Never freed: exit() flushes the cookie streams after static destructors ran.
  static SafeSink* out_sink = new SafeSink{stdout, {}};
  static SafeSink* err_sink = new SafeSink{stderr, {}};
  static SafeBuf* out_buf = new SafeBuf(*out_sink);
  static SafeBuf* err_buf = new SafeBuf(*err_sink);
  std::fflush(stdout);
  std::fflush(stderr);
  if (FILE* f = safe_file(*out_sink)) stdout = f;
  if (FILE* f = safe_file(*err_sink)) stderr = f;
  std::cout.rdbuf(out_buf);
  std::cerr.rdbuf(err_buf);
}

}  // namespace kiln
