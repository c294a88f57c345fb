// Localize (accuracy): one run records every intermediate of the compiled
// code (unfused) and of eager in the graph's dtypes and in float64; the
// first node whose compiled value fails the accuracy rule is where the bug
// shows first. Try that node alone fed with recorded values, then with the
// producers whose compiled values were not recorded (fused into it by the
// lowering), then the graph cut after it, before any blind search.
#include "minifier/predicate_util.h"
#include "minifier/strategies/strategies.h"

namespace kiln::minify {

namespace {

class Localize : public Strategy {
 public:
  const char* name() const override { return "localize"; }

  bool run(ReductionContext& ctx) override {
    if (done_ || ctx.predicate().kind != CheckKind::Accuracy) return false;
    done_ = true;  // once: later rounds start from what it found
    if (op_count(ctx.current().graph) < 2) return false;
    const Recording* rec = ctx.recording(/*fp64=*/true, /*compiled=*/true);
    if (!rec || rec->compiled.empty()) return false;
    const Candidate base = ctx.current();
    const Recording values = *rec;
    NodeId divergent = kNoNode;
    for (size_t i = 0; i < base.graph.size() && divergent == kNoNode; ++i) {
      const Node& n = base.graph.nodes[i];
      if (n.op != OpKind::CallFunction) continue;
      auto e = values.eager.find(n.name), c = values.compiled.find(n.name), f = values.fp64.find(n.name);
      if (e == values.eager.end() || c == values.compiled.end()) continue;
      Tensor fp64 = f == values.fp64.end() ? Tensor() : f->second;
      if (!compare_tensor(e->second, c->second, fp64, ctx.predicate().tolerance, ctx.predicate().check_non_float).empty())
        divergent = NodeId(i);
    }
    if (divergent == kNoNode) return false;
    Candidate ending = base;
    set_outputs(ending.graph, {Arg::node(divergent)});
    prune(ending);
    // The node alone; with its unrecorded producers; the cut after it.
    std::vector<bool> alone(base.graph.size(), false), with_producers(base.graph.size(), false);
    alone[size_t(divergent)] = with_producers[size_t(divergent)] = true;
    for (size_t i = size_t(divergent) + 1; i-- > 0;) {
      if (!with_producers[i]) continue;
      for_each_input(base.graph.nodes[i], [&](NodeId in) {
        const Node& p = base.graph[in];
        if (p.op == OpKind::CallFunction && !values.compiled.count(p.name)) with_producers[size_t(in)] = true;
      });
    }
    std::vector<std::optional<Candidate>> candidates;
    candidates.push_back(replace_nodes_by_inputs(ending, remap(base, ending, alone), values));
    candidates.push_back(replace_nodes_by_inputs(ending, remap(base, ending, with_producers), values));
    if (with_producers == alone) candidates[1].reset();
    candidates.push_back(op_count(ending.graph) < op_count(base.graph) ? std::optional<Candidate>(ending) : std::nullopt);
    int k = ctx.first_interesting(candidates);
    if (k < 0) return false;
    const char* how[] = {"alone", "with its fused producers", "and everything before it"};
    ctx.accept(std::move(*candidates[size_t(k)]),
               "first divergent node " + base.graph[divergent].name + ", " + how[k]);
    return true;
  }

 private:
  // `keep` is over base's node ids; `pruned` lost some nodes, so map by name.
  static std::vector<bool> remap(const Candidate& base, const Candidate& pruned, const std::vector<bool>& keep) {
    std::vector<bool> out(pruned.graph.size(), false);
    for (size_t i = 0; i < base.graph.size(); ++i) {
      if (!keep[i]) continue;
      NodeId at = pruned.graph.find(base.graph.nodes[i].name);
      if (at != kNoNode) out[size_t(at)] = true;
    }
    return out;
  }

  bool done_ = false;
};

}  // namespace

std::unique_ptr<Strategy> make_localize() { return std::make_unique<Localize>(); }

}  // namespace kiln::minify
