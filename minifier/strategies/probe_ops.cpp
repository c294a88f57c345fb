// Probe ops (oracle only): each kind of op alone, fed with recorded values,
// before any search over the whole graph. With real PyTorch as the oracle a
// candidate costs an Inductor compile of its size (a truncated ResNet-18
// forward took 10-25 s each with cold caches), while a one-op candidate
// compiles in about a second. A bug that shows in a single op (a wrong
// lowering, an injected relu bug) is then found in a batch or two; one that
// needs several ops together (a fusion bug) costs only those small probes
// before the other strategies go on.
#include <algorithm>
#include <set>

#include "compiler/pipeline/aten_interpreter.h"

#include "minifier/strategies/strategies.h"

namespace kiln::minify {

namespace {

constexpr size_t kMaxProbes = 64;

std::string kind_of(const Node& n) {
  std::string k = n.target;
  if (n.meta.val.is_tensor()) k += ":" + n.meta.val.tensor.dtype;
  return k;
}

}  // namespace

std::vector<Candidate> probe_candidates(const Candidate& base, const Recording& values, std::vector<std::string>* targets) {
  std::set<std::string> seen;
  std::vector<size_t> order;
  for (size_t i = 0; i < base.graph.size(); ++i) {
    const Node& n = base.graph.nodes[i];
    // ATen ops and prims only (getitem and other Python calls mean nothing alone).
    if (n.op != OpKind::CallFunction || n.target.find("::") == std::string::npos) continue;
    if (seen.insert(kind_of(n)).second) order.push_back(i);
  }
  // A view alone compiles to no kernel (Inductor reinterprets the input), so
  // it can hardly show a code-generation bug: views are probed last.
  std::stable_partition(order.begin(), order.end(), [&](size_t i) { return !pipeline::is_view_op(base.graph.nodes[i].target); });
  std::vector<Candidate> probes;
  for (size_t i : order) {
    if (probes.size() >= kMaxProbes) break;
    const Node& n = base.graph.nodes[i];
    Candidate alone = base;
    set_outputs(alone.graph, {Arg::node(NodeId(i))});
    prune(alone);
    const NodeId at = alone.graph.find(n.name);
    if (at == kNoNode) continue;
    std::vector<bool> keep(alone.graph.size(), false);
    keep[size_t(at)] = true;
    std::optional<Candidate> fed = replace_nodes_by_inputs(alone, keep, values);
    probes.push_back(fed ? std::move(*fed) : std::move(alone));
    if (targets) targets->push_back(n.target);
  }
  return probes;
}

namespace {

class ProbeOps : public Strategy {
 public:
  const char* name() const override { return "probe-ops"; }

  bool run(ReductionContext& ctx) override {
    if (done_ || ctx.predicate().kind != CheckKind::Oracle) return false;
    done_ = true;  // once: later rounds work on what it found
    if (op_count(ctx.current().graph) < 2) return false;
    const Recording* rec = ctx.recording();
    if (!rec) return false;
    const Candidate base = ctx.current();
    const Recording values = *rec;
    std::vector<std::string> names;
    std::vector<std::optional<Candidate>> probes;
    for (Candidate& c : probe_candidates(base, values, &names)) probes.push_back(std::move(c));
    if (probes.empty()) return false;
    const int hit = ctx.first_interesting(probes);
    if (hit < 0) return false;
    ctx.accept(std::move(*probes[size_t(hit)]),
               names[size_t(hit)] + " fails alone (fed recorded values; " + std::to_string(probes.size()) + " kinds of op probed)");
    return true;
  }

 private:
  bool done_ = false;
};

}  // namespace

std::unique_ptr<Strategy> make_probe_ops() { return std::make_unique<ProbeOps>(); }

}  // namespace kiln::minify
