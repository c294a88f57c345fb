#pragma once
// The document `kiln-cli trace summary --json` prints (CLI.md's shape), kept
// in core so the fuzz targets drive the very writer the command uses.
#include <nlohmann/json.hpp>

#include "core/trace/trace.h"

namespace kiln::trace {

nlohmann::json summary_json(const Trace& t);

}  // namespace kiln::trace
