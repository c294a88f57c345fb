#include "compiler/passes/common_subexpression_elimination.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "compiler/passes/graph_editor.h"
#include "compiler/passes/op_properties.h"

namespace kiln::pipeline {

namespace {

class KeyWriter {
 public:
  explicit KeyWriter(const GraphEditor& ed) : ed_(ed) {}

  std::string key(const Node& n) {
    out_.clear();
    out_ += char('0' + int(n.op));
    text(n.target);
    for (const Arg& a : n.args) arg(a);
    // Keyword order carries no meaning.
    std::vector<const std::pair<std::string, Arg>*> kwargs;
    for (const auto& kv : n.kwargs) kwargs.push_back(&kv);
    std::sort(kwargs.begin(), kwargs.end(), [](auto* a, auto* b) { return a->first < b->first; });
    out_ += '|';
    for (auto* kv : kwargs) {
      text(kv->first);
      arg(kv->second);
    }
    return out_;
  }

 private:
  void text(std::string_view s) {
    out_ += std::to_string(s.size());
    out_ += ':';
    out_ += s;
  }
  void arg(const Arg& a) {
    out_ += char('a' + int(a.kind));
    switch (a.kind) {
      case Arg::Kind::Bool: out_ += a.b ? '1' : '0'; return;
      case Arg::Kind::Int: out_ += std::to_string(a.i) + a.s + ';'; return;
      case Arg::Kind::Float: {
        double f = std::isnan(a.f) ? std::nan("") : a.f;  // bits, so -0.0 stays apart from 0.0
        char bits[sizeof f];
        std::memcpy(bits, &f, sizeof f);
        out_.append(bits, sizeof f);
        return;
      }
      case Arg::Kind::Node: out_ += std::to_string(ed_.resolve(a.node_id())) + ';'; return;
      default: break;
    }
    text(a.s);
    out_ += std::to_string(a.items.size()) + '[';
    for (const Arg& item : a.items) arg(item);
    out_ += ']';
  }

  const GraphEditor& ed_;
  std::string out_;
};

bool mergeable(const Node& n) {
  if (n.op != OpKind::CallFunction && n.op != OpKind::GetAttr) return false;
  return is_pure(n);
}

bool is_barrier(const Node& n) {
  return n.op != OpKind::Placeholder && n.op != OpKind::Output && has_side_effects(n) && !is_random_op(n.target);
}

}  // namespace

PassResult eliminate_common_subexpressions(Graph& g, const PassContext&) {
  GraphEditor ed(g);
  KeyWriter keys(ed);
  std::unordered_map<std::string, NodeId> seen;
  size_t merged = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    if (is_barrier(n)) {
      seen.clear();
      continue;
    }
    if (!mergeable(n)) continue;
    auto [it, fresh] = seen.emplace(keys.key(n), NodeId(i));
    if (fresh) continue;
    Node& kept = g[it->second];
    for (const std::string& f : n.meta.from)
      if (std::find(kept.meta.from.begin(), kept.meta.from.end(), f) == kept.meta.from.end()) kept.meta.from.push_back(f);
    ed.replace_uses(NodeId(i), it->second);
    ed.erase(NodeId(i));
    ++merged;
  }
  if (!ed.commit()) return {};
  return {true, "merged " + std::to_string(merged) + (merged == 1 ? " node" : " nodes")};
}

}  // namespace kiln::pipeline
