#pragma once
// A small pattern rewriter for graph passes, in the manner of Inductor's
// pattern matcher: a rule is a DAG of op targets with named captures, and a
// callback that checks the match (dtypes, shapes) and builds the replacement
// with a GraphEmitter, or declines. Example, x * 1 -> x:
//
//   RewriteRule{"mul-one", Pattern::call("aten::mul.Tensor", {Pattern::value("x"), Pattern::literal(1)}),
//               [](const Match& m, Rewriter& r) { return r.replace_with(m.value("x")); }};
//
// Rules are tried at every node in graph order, first rule first; matching
// sees through replacements made earlier in the same sweep, and sweeps repeat
// until no rule applies. Nodes a replacement leaves unread are erased when
// pure. New nodes go right before the matched root and name every matched
// node as their provenance. The rewriter does not judge soundness: a rule
// that forwards one value for another is only sound on functional graphs, and
// its pass must check (graph_has_mutation).
//
// Tests: tests/compiler/test_pattern_rewriter.cpp; first user: simplify_algebra.h.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/passes/graph_editor.h"
#include "compiler/pipeline/emitter.h"
#include "core/graph/graph.h"

namespace kiln::pipeline {

class Pattern {
 public:
  // Any node; a name captured twice must be the same node both times.
  static Pattern value(std::string name);
  // A bool, int or float constant argument, captured.
  static Pattern scalar(std::string name);
  // An int or float constant equal to `v` (1 matches 1 and 1.0).
  static Pattern literal(double v);
  // A call_function node of `target` with exactly these positional arguments and no keyword arguments.
  static Pattern call(std::string target, std::vector<Pattern> args);

 private:
  friend class Matcher;
  enum class Kind { Value, Scalar, Literal, Call };
  Kind kind_ = Kind::Value;
  std::string text_;  // capture name or target
  double literal_ = 0;
  std::vector<Pattern> args_;
};

struct Match {
  NodeId root = kNoNode;
  std::vector<NodeId> calls;  // the matched call nodes, root first
  std::map<std::string, NodeId> values;
  std::map<std::string, Arg> scalars;
  NodeId value(const std::string& name) const { return values.at(name); }
  const Arg& scalar(const std::string& name) const { return scalars.at(name); }
};

// What a rule's callback works with.
class Rewriter {
 public:
  Rewriter(GraphEditor& ed, const Match& m) : ed_(ed), m_(m) {}
  const Graph& graph() const { return ed_.graph(); }
  // Meta tensor (sizes, strides, dtype) of a node; null when unknown.
  const Tensor* meta(NodeId id) const { return ed_.meta(id); }
  // Emits new nodes right before the root, with the match as their provenance.
  GraphEmitter& emitter() { return ed_.emit_before(m_.root, m_.calls); }
  // A node as an emitter Var (call emitter() first); invalid when its meta is unknown.
  Var var(NodeId id) { return ed_.var(id); }
  // Readers of the root read `node` instead. Returns true, so a callback can end with it.
  bool replace_with(NodeId node);
  bool replace_with(Var v) { return replace_with(ed_.node(v)); }
  // Same dtype and sizes as the root, so forwarding `node` changes no reader's types.
  bool same_type_as_root(NodeId node) const;

 private:
  GraphEditor& ed_;
  const Match& m_;
};

struct RewriteRule {
  std::string name;
  Pattern pattern;
  // True when it replaced the root (replace_with); false declines the match.
  std::function<bool(const Match&, Rewriter&)> rewrite;
};

struct RewriteStats {
  size_t applied = 0;
  std::map<std::string, size_t> per_rule;
};

// Applies `rules` until none applies (at most `max_sweeps` sweeps over the graph).
RewriteStats apply_rewrite_rules(Graph& g, const std::vector<RewriteRule>& rules,
                                 const ConstantTable* constants = nullptr, int max_sweeps = 8);

}  // namespace kiln::pipeline
