#pragma once
// Opening a dump through a workspace: a dump opened once reopens from its
// stored index (checked by size and modification time) without reading the log.
#include <string>

#include "core/store/workspace.h"
#include "core/trace/trace.h"
#include "core/util/status.h"

namespace kiln::trace {

// With a fresh stored index in `ws`, decodes it (`*from_store` = true);
// otherwise opens the dump with open_trace and stores its index. A stored
// index that cannot be decoded (older format, damage) is treated as absent and
// replaced. Without a workspace this is open_trace. A failure to store is not
// an error: the trace that was read is still returned.
Expected<Trace> open_trace_cached(const std::string& path, Workspace* ws, bool* from_store = nullptr);

}  // namespace kiln::trace
