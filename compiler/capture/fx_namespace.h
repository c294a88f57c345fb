#pragma once
// FX's _Namespace (torch/fx/graph.py) as Dynamo's output graph uses it: node
// names derived from a candidate ("mul", "l_x_", a variable name), made unique
// with "_N" suffixes, never shadowing a Python builtin or keyword. A node
// renamed after the variable it is stored in keeps its first name reserved, so
// `b = b * -1; return x * b` names its nodes `b` and `mul_1`.
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kiln::capture {

class FxNamespace {
 public:
  // A fresh unique name for `candidate`, as _Namespace.create_name(candidate, None).
  std::string create_name(std::string candidate);
  // Node._rename: the node named `current` takes a name for `candidate`;
  // `current` stays used.
  std::string rename(const std::string& current, const std::string& candidate);
  bool used(const std::string& name) const { return used_.count(name) > 0; }

  // Speculation: names made after mark() are forgotten by rollback(), as a
  // restarted trace never made them.
  size_t mark() const { return journal_.size(); }
  void rollback(size_t mark);

 private:
  struct Made {
    std::string name, base;
    bool had_count;
    int old_count;
  };
  std::set<std::string> used_;
  std::map<std::string, int> base_count_;
  std::vector<Made> journal_;
};

}  // namespace kiln::capture
