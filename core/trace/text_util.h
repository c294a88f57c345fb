#pragma once
// Reading the plain-text payloads Dynamo writes (graph break reasons) and
// small line helpers shared by the readers. Internal to core/trace.
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/trace.h"

namespace kiln::trace {

// Calls fn(text) for each line of a TORCH_TRACE payload region, its tab
// removed: the text PyTorch hashed is these joined by '\n'. Blank lines
// between payload lines are noise (tlparse drops them too); '\r\n' ends a line.
template <class Fn>
void for_each_payload_line(std::string_view region, Fn&& fn) {
  size_t pos = 0;
  while (pos < region.size()) {
    size_t eol = region.find('\n', pos);
    if (eol == std::string_view::npos) eol = region.size();
    std::string_view line = region.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    fn(line.substr(line.front() == '\t' ? 1 : 0));
  }
}

// Splits at '\n' (a trailing '\r' is dropped); the last line may be empty.
std::vector<std::string_view> split_lines(std::string_view text);
std::string_view trim(std::string_view s);
// "1 compile", "3 compiles".
std::string plural(size_t n, std::string_view one, std::string_view many);
bool starts_with(std::string_view s, std::string_view prefix);

// The payload of a dynamo_graph_break_reason artifact:
//   Graph break in user code at /path/file.py:4
//   Graph Break Reason: <reason, hints, ...>
//   User code traceback:
//     File "/path/file.py", line 4, in f
//       code
GraphBreak parse_graph_break_text(std::string_view text);

// Adds the `class Repro` of `source` (file #`file` of the trace) to `entry` as
// the stage `stage`, with the inputs its load_args() describes. False when the
// source has no Repro class.
bool add_repro(Trace& trace, CompileEntry& entry, uint32_t file, std::string_view source, const std::string& stage);

// Gives every entry its occurrence number and unique label; readers call it last.
void assign_labels(Trace& trace);

}  // namespace kiln::trace
