#pragma once
// Readers for real PyTorch dumps. Each returns a Trace (trace.h); damage in
// the input becomes a Diagnostic and reading goes on. An Expected error means
// the input could not be opened at all (missing path, unreadable file, a
// folder with nothing Kiln can read); its message names the path.
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/trace.h"
#include "core/util/status.h"

namespace kiln::trace {

// Whatever `path` is: a TORCH_TRACE log file or folder of *.log files, a
// TORCH_COMPILE_DEBUG folder (the torch_compile_debug folder, one run_* in it,
// or its torchinductor folder's parent), or a minifier repro.py /
// minifier_launcher.py (any *.py with a `class Repro`).
Expected<Trace> open_trace(const std::string& path, const ReadOptions& options = {});

// A TORCH_TRACE log, or a folder of them (one per rank or process, read in name order).
Expected<Trace> read_trace_log(const std::string& path, const ReadOptions& options = {});
// Whether a file is a TORCH_TRACE log: PyTorch's name for one
// (dedicated_log_torch_trace_*.log), or a first line that is a record. In a
// folder, other *.log files (a program's stdout, minify.log) are not read.
bool is_trace_log_file(const std::string& path);
// Indexes `text` as if it were a log file called `name` (tests, fuzzing).
Trace read_trace_text(std::string text, const std::string& name = "<memory>");

// Splits a Python argument list ("a, (1, 2), k='x, y'") at its top-level
// commas, each piece trimmed; quotes and brackets nest.
std::vector<std::string_view> split_python_args(std::string_view s);

Expected<Trace> read_compile_debug(const std::string& path);
Expected<Trace> read_minifier_file(const std::string& path);

// The inputs that a repro's `def load_args(reader):` describes. `source` is the
// whole file; lines are numbered from 1. Lines it cannot read become diagnostics.
std::vector<ReproInput> parse_load_args(std::string_view source, const std::string& file,
                                        std::vector<Diagnostic>* diagnostics = nullptr);

}  // namespace kiln::trace
