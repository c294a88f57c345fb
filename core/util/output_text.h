#pragma once
// Text Kiln writes out that carries bytes from its inputs: traces, repro
// files, paths, an oracle's output. Input is hostile: a name may hold bytes
// that are not UTF-8 (which the JSON writer refuses) or ESC and BEL (which a
// terminal obeys: clear the screen, set the window title).
#include <cstdio>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace kiln {

// JSON text in which every byte sequence that is not UTF-8 is replaced by
// U+FFFD; never throws on its strings. indent -1 is compact.
std::string json_text(const nlohmann::json& j, int indent = -1);

// `text` with control characters other than newline and tab (C0, DEL, C1,
// bytes that are not UTF-8) written as visible escapes: "\x1b", "\x9b".
std::string terminal_safe(std::string_view text);

// From now on everything written to stdout and stderr (printf, std::cout,
// std::cerr) passes through terminal_safe, a line at a time, in order. For
// the commands that print what they read; not for a program's own output.
void make_stdio_terminal_safe();

}  // namespace kiln
