#include "app/cli/case_report.h"

#include <cstdio>
#include <iostream>

#include "app/cli/commands.h"
#include "core/util/output_text.h"

namespace kiln::cli {

int report_cases(const std::vector<CaseResult>& results, bool json, const nlohmann::json& extra_fields) {
  int passed = 0, failed = 0, skipped = 0;
  nlohmann::json cases = nlohmann::json::array();
  for (const CaseResult& r : results) {
    (r.status == CaseStatus::Pass ? passed : r.status == CaseStatus::Fail ? failed : skipped)++;
    if (json) {
      cases.push_back({{"id", r.id}, {"op", r.op}, {"status", case_status_name(r.status)},
                       {"max_abs", r.max_abs}, {"max_rel", r.max_rel}, {"reason", r.reason}});
    } else {
      std::printf("%s %s %s max_abs=%.3g max_rel=%.3g%s%s\n", std::string(case_status_name(r.status)).c_str(),
                  r.id.c_str(), r.op.c_str(), r.max_abs, r.max_rel, r.reason.empty() ? "" : " ", r.reason.c_str());
    }
  }
  if (json) {
    nlohmann::json doc = {{"passed", passed}, {"failed", failed}, {"skipped", skipped}};
    for (const auto& [k, v] : extra_fields.items()) doc[k] = v;
    doc["cases"] = cases;
    std::cout << kiln::json_text(doc, 1) << "\n";
  } else {
    std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  }
  return failed ? kExitFailures : kExitOk;
}

}  // namespace kiln::cli
