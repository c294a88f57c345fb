#include "compiler/passes/specialize_ints.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>

namespace kiln::pipeline {
namespace {

// Python's floor division and modulo.
std::optional<int64_t> floordiv(int64_t a, int64_t b) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
std::optional<int64_t> mod(int64_t a, int64_t b) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// The value of an integer op on integer arguments; nullopt when it is not one
// or the result does not fit.
std::optional<Arg> fold(const std::string& target, const std::vector<Arg>& args) {
  // math.ceil / floor / trunc of what truediv made (FX prints them as math_ceil):
  // an integer again, as the sizes Dynamo computed with them were.
  const bool ceil = target == "math.ceil" || target == "math_ceil", floor = target == "math.floor" || target == "math_floor",
             trunc = target == "math.trunc" || target == "math_trunc";
  if ((ceil || floor || trunc) && args.size() == 1 && (args[0].kind == Arg::Kind::Float || (args[0].kind == Arg::Kind::Int && args[0].s.empty()))) {
    if (args[0].kind == Arg::Kind::Int) return args[0];
    const double x = args[0].f, r = ceil ? std::ceil(x) : floor ? std::floor(x) : std::trunc(x);
    if (!std::isfinite(r) || r < -9.2e18 || r > 9.2e18) return std::nullopt;
    return Arg::integer(int64_t(r));
  }
  std::vector<int64_t> v;
  for (const Arg& a : args) {
    if (a.kind != Arg::Kind::Int || !a.s.empty()) return std::nullopt;
    v.push_back(a.i);
  }
  auto integer = [](std::optional<int64_t> x) { return x ? std::optional<Arg>(Arg::integer(*x)) : std::nullopt; };
  auto checked = [&](bool (*op)(int64_t, int64_t, int64_t*)) -> std::optional<Arg> {
    int64_t r = 0;
    if (v.size() != 2 || op(v[0], v[1], &r)) return std::nullopt;
    return Arg::integer(r);
  };
  if (target == "operator.add") return checked([](int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); });
  if (target == "operator.sub") return checked([](int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); });
  if (target == "operator.mul") return checked([](int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); });
  if (v.size() == 2) {
    if (target == "operator.floordiv") return integer(floordiv(v[0], v[1]));
    // int / int is a float in Python, correctly rounded; so is the double
    // division of two integers that fit in 53 bits.
    constexpr int64_t kExact = int64_t(1) << 53;
    if (target == "operator.truediv" && v[1] != 0 && std::abs(v[0]) <= kExact && std::abs(v[1]) <= kExact)
      return Arg::real(double(v[0]) / double(v[1]));
    if (target == "operator.mod") return integer(mod(v[0], v[1]));
    if (target == "operator.lt") return Arg::boolean(v[0] < v[1]);
    if (target == "operator.le") return Arg::boolean(v[0] <= v[1]);
    if (target == "operator.gt") return Arg::boolean(v[0] > v[1]);
    if (target == "operator.ge") return Arg::boolean(v[0] >= v[1]);
    if (target == "operator.eq") return Arg::boolean(v[0] == v[1]);
    if (target == "operator.ne") return Arg::boolean(v[0] != v[1]);
    if (target == "torch.sym_max") return Arg::integer(std::max(v[0], v[1]));
    if (target == "torch.sym_min") return Arg::integer(std::min(v[0], v[1]));
  }
  if (v.size() == 1) {
    if (target == "operator.neg" && v[0] != INT64_MIN) return Arg::integer(-v[0]);
    if (target == "operator.pos" || target == "torch.sym_int" || target == "builtins.int") return Arg::integer(v[0]);
  }
  return std::nullopt;
}

void substitute(Arg& a, const std::map<NodeId, Arg>& values) {
  if (a.kind == Arg::Kind::Node) {
    if (auto it = values.find(a.node_id()); it != values.end()) a = it->second;
    return;
  }
  for (Arg& item : a.items) substitute(item, values);
}

}  // namespace

Status specialize_int_inputs(Graph& g, const std::map<NodeId, int64_t>& values,
                             const std::map<NodeId, std::vector<int64_t>>& tensor_sizes) {
  std::map<NodeId, Arg> known;
  std::vector<bool> remove(g.size(), false);
  for (const auto& [id, value] : values) {
    if (id < 0 || id >= NodeId(g.size()) || g[id].op != OpKind::Placeholder)
      return Status::error("node " + std::to_string(id) + " is not a placeholder");
    known[id] = Arg::integer(value);
    remove[size_t(id)] = true;
  }
  for (NodeId id = 0; id < NodeId(g.size()); ++id) {
    Node& n = g[id];
    if (remove[size_t(id)]) continue;
    for (Arg& a : n.args) substitute(a, known);
    for (auto& [key, a] : n.kwargs) substitute(a, known);
    if (n.op != OpKind::CallFunction || !n.kwargs.empty()) continue;
    if (n.target == "aten::sym_size.int" && n.args.size() == 2 && n.args[0].kind == Arg::Kind::Node &&
        n.args[1].kind == Arg::Kind::Int) {
      auto sizes = tensor_sizes.find(n.args[0].node_id());
      const int64_t rank = sizes == tensor_sizes.end() ? 0 : int64_t(sizes->second.size());
      const int64_t dim = n.args[1].i < 0 ? n.args[1].i + rank : n.args[1].i;
      if (sizes != tensor_sizes.end() && dim >= 0 && dim < rank) {
        known[id] = Arg::integer(sizes->second[size_t(dim)]);
        remove[size_t(id)] = true;
        continue;
      }
    }
    if (auto folded = fold(n.target, n.args)) {
      known[id] = *folded;
      remove[size_t(id)] = true;
      continue;
    }
    // Integer arithmetic left unfolded: it overflowed, divided by zero, or is an op this does not know.
    const bool integer_op = n.target.starts_with("operator.") || n.target.starts_with("torch.sym_");
    const bool constant_args = !n.args.empty() && std::all_of(n.args.begin(), n.args.end(), [](const Arg& a) { return a.kind == Arg::Kind::Int; });
    if (integer_op && constant_args) {
      std::string args;
      for (const Arg& a : n.args) args += (args.empty() ? "" : ", ") + (a.s.empty() ? std::to_string(a.i) : a.s);
      return Status::error("node '" + n.name + "': " + n.target + "(" + args +
                           ") has no 64-bit integer value at the recorded sizes (an overflow, a division by zero, or an op Kiln does not fold)");
    }
  }
  // What still reads a removed node cannot be replayed with constants.
  for (NodeId id = 0; id < NodeId(g.size()); ++id) {
    if (remove[size_t(id)]) continue;
    std::optional<NodeId> reads;
    for_each_input(g[id], [&](NodeId in) {
      if (remove[size_t(in)] && !reads) reads = in;
    });
    if (reads) return Status::error("node '" + g[id].name + "' uses '" + g[*reads].name + "' in a way that cannot be replayed at a fixed value");
  }
  remove_nodes(g, remove);
  return {};
}

}  // namespace kiln::pipeline
