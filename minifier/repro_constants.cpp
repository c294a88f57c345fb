// The tensor constants of a PyTorch repro's Repro module. After-AOT files
// define them in __init__ and read them in forward with get_attr:
//     self.register_buffer('_tensor_constant0', tensor([0.2000, 0.2000]))
//     _tensor_constant0 = self._tensor_constant0
// A constant written out as a literal (tensor(...), or zeros/ones/full of a
// shape) is read exactly and becomes an input of the replayed graph, after
// the file's own; one whose values the file does not hold (torch.empty,
// torch.randn at import) is refused by name.
#include <algorithm>
#include <cctype>
#include <regex>

#include "core/tensor/dtype.h"
#include "core/tensor/generator.h"
#include "core/trace/reader.h"
#include "minifier/repro_internal.h"

namespace kiln::minify {
namespace {

std::string_view trim_view(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A nested list of numbers: its shape and values (as text, read per dtype).
struct Literal {
  Shape shape;
  std::vector<std::string> values;
  bool floats = false, bools = false;
};

bool read_literal(std::string_view s, Literal& lit, size_t depth) {
  s = trim_view(s);
  if (depth > 32) return false;
  if (s.starts_with("[")) {
    if (!s.ends_with("]")) return false;
    std::vector<std::string_view> items = trace::split_python_args(s.substr(1, s.size() - 2));
    if (lit.shape.size() == depth) lit.shape.push_back(int64_t(items.size()));
    else if (lit.shape.size() <= depth || lit.shape[depth] != int64_t(items.size())) return false;  // ragged
    for (std::string_view item : items)
      if (!read_literal(item, lit, depth + 1)) return false;
    return true;
  }
  if (depth != lit.shape.size()) return false;  // a number where a list was
  std::string v(s);
  if (v == "True" || v == "False") {
    lit.bools = true;
    lit.values.push_back(v == "True" ? "1" : "0");
    return true;
  }
  if (v == "inf" || v == "-inf" || v == "nan" || v.find_first_of(".eE") != std::string::npos) lit.floats = true;
  char* end = nullptr;
  std::strtod(v.c_str(), &end);
  if (v.empty() || (end != v.c_str() + v.size() && v != "inf" && v != "-inf" && v != "nan")) return false;
  lit.values.push_back(v);
  return true;
}

std::optional<DType> dtype_arg(const std::vector<std::string_view>& args) {
  for (std::string_view a : args) {
    if (!a.starts_with("dtype")) continue;
    std::string_view value = trim_view(a.substr(a.find('=') + 1));
    if (value.starts_with("torch.")) value.remove_prefix(6);
    return dtype_from_name(value);
  }
  return std::nullopt;
}

// tensor(...), torch.zeros/ones/full(...) as PyTorch prints constants; why not otherwise.
Tensor constant_value(std::string_view expr, const std::string& name, const SourceLocation& where, CpuGenerator& gen) {
  expr = trim_view(expr);
  const size_t open = expr.find('(');
  if (open == std::string_view::npos || !expr.ends_with(")"))
    throw Error("constant '" + name + "' = " + std::string(expr) + ": not a tensor Kiln can read", where);
  std::string_view fn = expr.substr(0, open);
  if (fn.starts_with("torch.")) fn.remove_prefix(6);
  const std::vector<std::string_view> args = trace::split_python_args(expr.substr(open + 1, expr.size() - open - 2));
  if (args.empty()) throw Error("constant '" + name + "': " + std::string(fn) + "() with no arguments", where);
  const std::optional<DType> dtype = dtype_arg(args);
  if (fn == "tensor") {
    Literal lit;
    if (!read_literal(args[0], lit, 0))
      throw Error("constant '" + name + "': tensor(" + std::string(args[0].substr(0, 60)) + ") is not a literal Kiln reads", where);
    const DType to = dtype.value_or(lit.floats ? DType::Float32 : lit.bools ? DType::Bool : DType::Int64);
    // Integers exactly as written; floats through double, as torch.tensor reads Python floats.
    if (!lit.floats) {
      std::vector<int64_t> v;
      for (const std::string& x : lit.values) v.push_back(std::stoll(x));
      return Tensor::from_vector(v, lit.shape).to(to);
    }
    std::vector<double> v;
    for (const std::string& x : lit.values) v.push_back(std::strtod(x.c_str(), nullptr));
    return Tensor::from_vector(v, lit.shape).to(to);
  }
  if (fn == "zeros" || fn == "ones" || fn == "full" || fn == "randn" || fn == "rand") {
    Literal shape;
    std::string_view sizes = args[0];
    if (sizes.starts_with("(")) sizes = sizes.substr(1, sizes.size() - 2);
    if (!read_literal(sizes.starts_with("[") ? sizes : "[" + std::string(sizes) + "]", shape, 0) || shape.floats)
      throw Error("constant '" + name + "': " + std::string(fn) + "'s size " + std::string(args[0]) + " is not a list of integers", where);
    Shape s;
    for (const std::string& x : shape.values) s.push_back(std::stoll(x));
    const DType to = dtype.value_or(DType::Float32);
    if (fn == "randn" || fn == "rand") {
      if (!is_floating(to)) throw Error("constant '" + name + "': " + std::string(fn) + " of a non-float dtype", where);
      Tensor t = Tensor::empty(s, to);
      if (fn == "randn") normal_(t, 0, 1, gen);
      else uniform_(t, 0, 1, gen);
      return t;
    }
    if (fn == "full") {
      if (args.size() < 2) throw Error("constant '" + name + "': full() without a fill value", where);
      return Tensor::full(s, Scalar(std::strtod(std::string(args[1]).c_str(), nullptr)), to);
    }
    return Tensor::full(s, Scalar(fn == "ones" ? 1.0 : 0.0), to);
  }
  throw Error("constant '" + name + "' = " + std::string(fn) +
                  "(...): the file does not hold its values (tensor(...), zeros, ones and full are read exactly; randn and rand drawn)",
              where);
}

}  // namespace

std::vector<ReproConstant> repro_constants(std::string_view source, const std::string& file, int first_line) {
  std::vector<ReproConstant> out;
  CpuGenerator gen(kDefaultInputSeed);
  static const std::regex buffer(R"re(^\s*self\.register_buffer\(\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s*,\s*(.*)\)\s*$)re");
  static const std::regex attribute(R"re(^\s*self\.([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$)re");
  int line = first_line - 1;
  size_t pos = 0;
  bool in_init = false;
  while (pos < source.size()) {
    const size_t eol = std::min(source.find('\n', pos), source.size());
    const std::string text(source.substr(pos, eol - pos));
    pos = eol + 1;
    ++line;
    const std::string_view t = trim_view(text);
    if (t.starts_with("def __init__(")) in_init = true;
    else if (t.starts_with("def ")) in_init = false;
    if (!in_init) continue;
    std::smatch m;
    if (!std::regex_match(text, m, buffer) && !std::regex_match(text, m, attribute)) continue;
    // Tensors only: an after-dynamo file's modules (self.conv = Conv2d(...)) are
    // call_module nodes, which the ATen check refuses by name.
    const std::string expr = m[2].str();
    std::string_view fn = std::string_view(expr).substr(0, expr.find('('));
    if (fn.starts_with("torch.")) fn.remove_prefix(6);
    static const char* const kTensorMakers[] = {"tensor", "zeros", "ones", "full", "empty", "empty_strided", "randn", "rand", "randint"};
    if (std::find(std::begin(kTensorMakers), std::end(kTensorMakers), fn) == std::end(kTensorMakers)) continue;
    out.push_back({m[1].str(), constant_value(expr, m[1].str(), {file, line}, gen), line,
                   fn == "randn" || fn == "rand" ? std::string(fn) : std::string()});
  }
  return out;
}

void constants_to_inputs(Repro& r, const std::vector<ReproConstant>& constants) {
  if (constants.empty()) return;
  Graph& g = r.graph;
  // New order: the file's placeholders, then one per constant read, then the rest.
  std::vector<NodeId> order, moved;
  for (NodeId id = 0; id < NodeId(g.size()); ++id)
    if (g[id].op == OpKind::Placeholder) order.push_back(id);
  for (const ReproConstant& c : constants)
    for (NodeId id = 0; id < NodeId(g.size()); ++id)
      if (g[id].op == OpKind::GetAttr && g[id].target == c.name) {
        order.push_back(id);
        moved.push_back(id);
        r.inputs.push_back(c.value);
        r.input_origins.push_back(c.drawn_by.empty() ? "constant (Repro.__init__, line " + std::to_string(c.line) + ")"
                                                     : "random (torch." + c.drawn_by + " in Repro.__init__, line " +
                                                           std::to_string(c.line) + ", seed " + std::to_string(kDefaultInputSeed) + ")");
      }
  if (moved.empty()) return;
  for (NodeId id = 0; id < NodeId(g.size()); ++id)
    if (g[id].op != OpKind::Placeholder && std::find(moved.begin(), moved.end(), id) == moved.end()) order.push_back(id);
  std::vector<NodeId> new_id(g.size());
  for (size_t k = 0; k < order.size(); ++k) new_id[size_t(order[k])] = NodeId(k);
  std::function<void(Arg&)> remap = [&](Arg& a) {
    if (a.kind == Arg::Kind::Node) a.i = new_id[size_t(a.i)];
    for (Arg& item : a.items) remap(item);
  };
  std::vector<Node> nodes;
  for (NodeId id : order) {
    Node n = std::move(g[id]);
    if (std::find(moved.begin(), moved.end(), id) != moved.end()) n.op = OpKind::Placeholder;  // target: the attribute's name
    for (Arg& a : n.args) remap(a);
    for (auto& [key, a] : n.kwargs) remap(a);
    nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
}

}  // namespace kiln::minify
