#include "compiler/passes/pattern_rewriter.h"

#include "core/util/status.h"

namespace kiln::pipeline {

Pattern Pattern::value(std::string name) {
  Pattern p;
  p.kind_ = Kind::Value;
  p.text_ = std::move(name);
  return p;
}

Pattern Pattern::scalar(std::string name) {
  Pattern p;
  p.kind_ = Kind::Scalar;
  p.text_ = std::move(name);
  return p;
}

Pattern Pattern::literal(double v) {
  Pattern p;
  p.kind_ = Kind::Literal;
  p.literal_ = v;
  return p;
}

Pattern Pattern::call(std::string target, std::vector<Pattern> args) {
  Pattern p;
  p.kind_ = Kind::Call;
  p.text_ = std::move(target);
  p.args_ = std::move(args);
  return p;
}

class Matcher {
 public:
  Matcher(const GraphEditor& ed, Match& m) : ed_(ed), g_(ed.graph()), m_(m) {}

  bool node(const Pattern& p, NodeId id) {
    switch (p.kind_) {
      case Pattern::Kind::Value: {
        auto [it, fresh] = m_.values.emplace(p.text_, id);
        return fresh || it->second == id;
      }
      case Pattern::Kind::Call: {
        const Node& n = g_[id];
        if (n.op != OpKind::CallFunction || n.target != p.text_ || n.args.size() != p.args_.size() || !n.kwargs.empty())
          return false;
        m_.calls.push_back(id);
        for (size_t i = 0; i < p.args_.size(); ++i)
          if (!arg(p.args_[i], n.args[i])) return false;
        return true;
      }
      default: return false;
    }
  }

  bool arg(const Pattern& p, const Arg& a) {
    if (a.is_node()) return node(p, ed_.resolve(a.node_id()));
    switch (p.kind_) {
      case Pattern::Kind::Scalar:
        if (a.kind != Arg::Kind::Bool && a.kind != Arg::Kind::Int && a.kind != Arg::Kind::Float) return false;
        if (auto [it, fresh] = m_.scalars.emplace(p.text_, a); !fresh && !(it->second == a)) return false;
        return true;
      case Pattern::Kind::Literal:
        if (a.kind == Arg::Kind::Int) return a.s.empty() && double(a.i) == p.literal_;
        return a.kind == Arg::Kind::Float && a.f == p.literal_;
      default: return false;
    }
  }

 private:
  const GraphEditor& ed_;
  const Graph& g_;
  Match& m_;
};

bool Rewriter::replace_with(NodeId node) {
  ed_.replace_uses(m_.root, node);
  return true;
}

bool Rewriter::same_type_as_root(NodeId node) const {
  const Tensor* a = meta(node);
  const Tensor* b = meta(m_.root);
  return a && b && a->dtype() == b->dtype() && a->sizes() == b->sizes();
}

RewriteStats apply_rewrite_rules(Graph& g, const std::vector<RewriteRule>& rules, const ConstantTable* constants,
                                 int max_sweeps) {
  RewriteStats stats;
  for (int sweep = 0; sweep < max_sweeps; ++sweep) {
    GraphEditor ed(g, constants);
    size_t applied = 0;
    const size_t n = g.size();
    for (size_t i = 0; i < n; ++i) {
      if (g.nodes[i].op != OpKind::CallFunction || ed.replaced(NodeId(i))) continue;
      for (const RewriteRule& rule : rules) {
        Match m;
        m.root = NodeId(i);
        if (!Matcher(ed, m).node(rule.pattern, NodeId(i))) continue;
        Rewriter r(ed, m);
        bool done = false;
        try {
          done = rule.rewrite(m, r);
        } catch (const Error&) {
          done = false;  // the emitter rejected the replacement (a meta function failed): decline
        }
        if (!done) continue;
        KILN_CHECK(ed.replaced(NodeId(i)), "rule '", rule.name, "' accepted a match without replacing its root");
        ++applied;
        ++stats.per_rule[rule.name];
        break;
      }
    }
    bool changed = ed.commit();
    stats.applied += applied;
    if (!changed || applied == 0) break;
  }
  return stats;
}

}  // namespace kiln::pipeline
