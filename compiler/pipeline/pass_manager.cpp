#include "compiler/pipeline/pass_manager.h"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "compiler/pipeline/provenance.h"
#include "core/graph/hash.h"
#include "core/graph/printer.h"
#include "core/graph/verify.h"

namespace kiln::pipeline {

namespace {

bool same_names(const Graph& a, const Graph& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a.nodes[i].name != b.nodes[i].name) return false;
  return true;
}

// What is wrong with `after`, the result of `pass` on `before`.
std::vector<std::string> check_application(const Pass& pass, const PassResult& r, const Graph& before, const Graph& after) {
  std::vector<std::string> problems;
  bool same = structural_hash(before) == structural_hash(after) && same_names(before, after);
  if (!r.changed && !same)
    problems.push_back("pass '" + std::string(pass.name) + "' reported no change but changed the graph");
  if (r.changed && same)
    problems.push_back("pass '" + std::string(pass.name) + "' reported a change but the graph is the same");
  for (const Diagnostic& d : verify(after)) problems.push_back(d.to_string());
  if (r.changed)
    for (const Diagnostic& d : check_provenance(before, after)) problems.push_back("provenance: " + d.to_string());
  return problems;
}

}  // namespace

std::string Stage::label() const {
  std::string out = group.empty() ? name : group + " " + name;
  if (application > 0) out += " #" + std::to_string(application);
  return out;
}

PassManager::PassManager(PassManagerOptions options) : options_(std::move(options)) {}

Status PassManager::add(std::string_view name) {
  if (const Pass* p = find_pass(name)) {
    add(*p);
    return {};
  }
  std::string known;
  for (const Pass& p : pass_registry()) known += (known.empty() ? "" : ", ") + std::string(p.name);
  return Status::error("unknown pass '" + std::string(name) + "' (known passes: " + known + ")");
}

void PassManager::record(std::string name, const Graph& g) {
  Stage s;
  s.name = std::move(name);
  s.changed = true;
  s.graph = std::make_shared<const Graph>(g);
  if (options_.on_stage) options_.on_stage(s);
  stages_.push_back(std::move(s));
}

Status PassManager::run(Graph& g, const PassContext& ctx) {
  // g is overwritten at the end: its nodes move in rather than being copied.
  auto current = std::make_shared<const Graph>(std::move(g));
  Status status;
  for (const Pass& pass : passes_) {
    if (options_.stop_after >= 0 && applications_ >= options_.stop_after) {
      stopped_ = true;
      break;
    }
    if (options_.cancel && options_.cancel->load()) {
      status = Status::error("cancelled");
      break;
    }
    status = apply(pass, current, ctx);
    if (!status.ok()) break;
  }
  // No stage kept the last graph: it moves out (200,000 nodes copy in a tenth of a second).
  if (current.use_count() == 1) g = std::move(const_cast<Graph&>(*current));
  else g = *current;
  return status;
}

Status PassManager::apply(const Pass& pass, std::shared_ptr<const Graph>& current, const PassContext& ctx) {
  Stage stage;
  stage.name = std::string(pass.name);
  stage.application = ++applications_;
  Graph work = *current;
  reset_provenance(work);
  PassResult r;
  auto start = std::chrono::steady_clock::now();
  try {
    r = pass.run(work, ctx);
  } catch (const std::exception& e) {
    stage.problems.push_back("pass '" + stage.name + "' failed: " + e.what());
  }
  stage.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stage.changed = r.changed;
  stage.summary = r.summary;
  if (stage.problems.empty() && options_.verify_each) stage.problems = check_application(pass, r, *current, work);
  if (r.changed || !stage.problems.empty()) stage.graph = std::make_shared<const Graph>(std::move(work));
  print(stage);
  if (options_.on_stage) options_.on_stage(stage);
  Status status;
  if (!stage.problems.empty()) {
    status = Status::error("after pass '" + stage.name + "' (application " + std::to_string(stage.application) +
                           "): " + stage.problems.front());
  } else if (r.changed) {
    current = stage.graph;
  }
  stages_.push_back(std::move(stage));
  return status;
}

void PassManager::print(const Stage& stage) {
  bool wanted = options_.print_after_all ||
                std::find(options_.print_after.begin(), options_.print_after.end(), stage.name) != options_.print_after.end();
  if (!wanted || (options_.print_only_on_change && !stage.changed)) return;
  std::ostream& os = options_.print_to ? *options_.print_to : std::cerr;
  os << "// -----// " << (stage.graph ? "Graph after " : "") << stage.name << " (application " << stage.application << ")";
  if (!stage.changed) os << ": unchanged";
  else if (!stage.summary.empty()) os << ": " << stage.summary;
  os << " //----- //\n";
  for (const std::string& p : stage.problems) os << "// error: " << p << "\n";
  if (stage.graph) os << print_graph_module(*stage.graph);
}

}  // namespace kiln::pipeline
