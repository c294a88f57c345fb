#pragma once
// How conformance-style commands (conformance, grad-check) print their cases:
// one `STATUS id op max_abs max_rel reason` line each and the summary, or one
// JSON document (CLI.md's shape) with the command's own extra fields.
#include <vector>

#include <nlohmann/json.hpp>

#include "core/corpus/conformance.h"

namespace kiln::cli {

// Prints `results`; returns the exit code (failures: 1).
int report_cases(const std::vector<CaseResult>& results, bool json, const nlohmann::json& extra_fields);

}  // namespace kiln::cli
