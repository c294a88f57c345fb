#pragma once
// `kiln-cli trace report TRACE --out DIR`: a static HTML report of a dump that
// a user can attach to a bug report or open without Kiln. One folder:
//   index.html           the trace: totals, the stack trie of where compiles
//                        came from, every compile id per rank with its status,
//                        breaks, failures, restarts, recompiles, cache and
//                        compile time; the rank comparison; diagnostics
//   c/N.html             compile N (in log order): stack, breaks and failures
//                        with their text, restarts, recompile reasons, cache,
//                        guards, symbolic shapes, metrics, chromium phases,
//                        and a link per stage and artifact
//   c/N/K.html           stage or artifact K of compile N, numbered lines
// Pages are rendered from Mustache templates (core/trace/report_templates.cpp)
// through kainjow::mustache, which escapes every value. The folder is written
// beside DIR and renamed into place, so a failed run leaves no half report.
//
// Tests: tests/core/test_trace_report.cpp.
#include <cstddef>
#include <functional>
#include <string>

#include "core/trace/trace.h"
#include "core/util/status.h"

namespace kiln::trace {

struct ReportOptions {
  bool overwrite = false;  // replace an existing DIR (else an existing DIR is an error)
  // Payloads longer than this are cut, with a line saying so and where the
  // whole text lies in the log.
  size_t max_payload_bytes = size_t(8) << 20;
  std::function<void(double)> progress;  // fraction of compiles written
};

struct ReportStats {
  size_t pages = 0;
  size_t compiles = 0;
  size_t payloads = 0;
  size_t truncated = 0;  // payloads cut at max_payload_bytes
  size_t unreadable = 0; // payloads that could not be read (their page says why)
};

Status write_report(const Trace& trace, const std::string& out_dir, const ReportOptions& options = {},
                    ReportStats* stats = nullptr);

}  // namespace kiln::trace
