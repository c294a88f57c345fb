#include "minifier/candidate.h"

#include <cstring>
#include <functional>
#include <set>
#include <type_traits>

#include "compiler/passes/dead_code_elimination.h"
#include "compiler/passes/graph_editor.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"
#include "core/graph/hash.h"
#include "core/graph/parser.h"
#include "core/ops/overloads.h"
#include "core/ops/registry.h"

namespace kiln::minify {

size_t op_count(const Graph& g) {
  size_t n = 0;
  for (const Node& node : g.nodes)
    n += node.op == OpKind::CallFunction || node.op == OpKind::CallMethod || node.op == OpKind::CallModule;
  return n;
}

CandidateSize size_of(const Candidate& c) {
  CandidateSize s;
  for (const Node& n : c.graph.nodes)
    s.ops += is_call(n) && n.target != "aten::full.default";
  s.inputs = c.inputs.size();
  for (const Tensor& t : c.inputs) {
    s.elements += t.numel();
    DType d = t.dtype();
    s.unusual_dtypes += d != DType::Float32 && d != DType::Int64 && d != DType::Bool;
  }
  s.outputs = output_items(c.graph).size();
  return s;
}

std::vector<NodeId> placeholders(const Graph& g) {
  std::vector<NodeId> out;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.nodes[i].op == OpKind::Placeholder) out.push_back(NodeId(i));
  return out;
}

namespace {

Val val_of(const Value& v) {
  if (v.is_tensor()) return Val::of_tensor(pipeline::tensor_meta_of(v.to_tensor()));
  if (v.is_list()) {
    std::vector<Val> items;
    for (const Value& x : v.to_list()) items.push_back(val_of(x));
    return Val::tuple(std::move(items));
  }
  return Val();
}

// A meta value from a file's annotation: a tensor, or a tuple of them; none otherwise.
Value meta_value_of(const Val& v) {
  if (v.kind == Val::Kind::Tuple || v.kind == Val::Kind::List) {
    ValueList items;
    for (const Val& x : v.items) {
      Value item = meta_value_of(x);
      if (item.is_none()) return Value();
      items.push_back(std::move(item));
    }
    return Value(std::move(items));
  }
  std::optional<Tensor> t = pipeline::meta_tensor_of(v);
  return t ? Value(*t) : Value();
}

Tensor meta_like(const Tensor& t) { return Tensor::meta_strided(t.sizes(), t.strides(), t.dtype()); }

Value as_meta(const Value& v) {
  if (v.is_tensor()) return Value(meta_like(v.to_tensor()));
  if (v.is_list()) {
    ValueList items;
    for (const Value& x : v.to_list()) items.push_back(as_meta(x));
    return Value(std::move(items));
  }
  return v;
}

// Graphs PyTorch prints pass Python numbers where a schema says Tensor
// (`aten.mul.Tensor(x, 2)`): PyTorch's argument parser wraps them into
// tensors, Kiln's registry does not. The same op's overload that takes the
// arguments as they are (mul.Scalar) means the same, so the node is moved to
// it; the first overload, in registry order, whose meta function accepts wins.
std::optional<std::string> overload_taking(const std::string& target, const ValueList& args, const KwargList& kwargs) {
  size_t dot = target.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  const std::string base = target.substr(0, dot + 1);
  for (const OpDef* def : op_registry().all()) {
    std::string name = def->schema.full_name();
    if (name == target || name.compare(0, base.size(), base) != 0) continue;
    try {
      if (call_meta(name, args, kwargs).ok()) return name;
    } catch (const Error&) {
    }
  }
  return std::nullopt;
}

// The packet's overload these arguments call, as PyTorch picks it: the first
// registered one whose meta function accepts them, `default` first.
std::optional<std::string> packet_overload(const std::string& packet, const ValueList& args, const KwargList& kwargs) {
  for (const std::string& name : registered_overloads(packet)) {
    try {
      if (call_meta(name, args, kwargs).ok()) return name;
    } catch (const Error&) {
    }
  }
  return std::nullopt;
}

// A Python number where the schema says Tensor that no other overload takes
// (`aten.sub.Tensor(1, x)`, as tanh's backward prints): PyTorch wraps it
// into a 0-dim tensor. The wrapper's dtype is chosen so type promotion gives
// what a wrapped number gives: the tensors' own dtype when the number's
// category (bool < int < float) is not above theirs, else the category's
// default dtype (int64, float32).
struct NumberWrap {
  size_t node = 0, arg = 0;
  DType dtype = DType::Float32;
};

bool is_number(const Arg& a) { return a.kind == Arg::Kind::Int || a.kind == Arg::Kind::Float || a.kind == Arg::Kind::Bool; }

int category(DType d) { return d == DType::Bool ? 0 : is_floating(d) ? 2 : 1; }

std::optional<DType> wrapped_number_dtype(const ValueList& args, const Value& number) {
  const int number_category = number.is_bool() ? 0 : number.is_int() ? 1 : 2;
  std::optional<DType> tensors;
  for (const Value& a : args)
    if (a.is_tensor()) tensors = tensors ? promote_types(*tensors, a.to_tensor().dtype()) : a.to_tensor().dtype();
  if (tensors && category(*tensors) >= number_category) return tensors;
  static constexpr DType kDefault[] = {DType::Bool, DType::Int64, DType::Float32};
  return kDefault[number_category];
}

// The node's meta with its numbers in Tensor slots wrapped; nullopt when
// there are none or the op still rejects the arguments.
std::optional<ValueList> meta_with_wrapped_numbers(const Node& n, size_t node, ValueList args, const KwargList& kwargs,
                                                   std::vector<NumberWrap>& wraps) {
  const OpDef* def = op_registry().find(n.target);
  if (!def) return std::nullopt;
  std::vector<NumberWrap> mine;
  for (size_t i = 0; i < args.size() && i < def->schema.args.size(); ++i) {
    const ArgType& type = def->schema.args[i].type;
    if (type.base != ArgType::Base::Tensor || type.is_list || !is_number(n.args[i])) continue;
    if (!(args[i].is_int() || args[i].is_float() || args[i].is_bool())) continue;
    std::optional<DType> d = wrapped_number_dtype(args, args[i]);
    if (!d) continue;
    mine.push_back({node, i, *d});
  }
  if (mine.empty()) return std::nullopt;
  for (const NumberWrap& w : mine) args[w.arg] = Value(Tensor::meta_strided({}, {}, w.dtype));
  try {
    Expected<ValueList> r = call_meta(n.target, args, kwargs);
    if (!r) return std::nullopt;
    wraps.insert(wraps.end(), mine.begin(), mine.end());
    return std::move(*r);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Gives each wrap an aten.scalar_tensor node just before the node that reads
// it. Arguments only refer to earlier nodes, so each node's references are
// renumbered as it is copied.
void insert_number_wrappers(Graph& g, const std::vector<NumberWrap>& wraps) {
  std::set<std::string> names;
  for (const Node& n : g.nodes) names.insert(n.name);
  std::vector<Node> nodes;
  std::vector<NodeId> new_id(g.size());
  std::function<void(Arg&)> renumber = [&](Arg& a) {
    if (a.kind == Arg::Kind::Node) a.i = new_id[size_t(a.i)];
    for (Arg& item : a.items) renumber(item);
  };
  size_t w = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    Node n = std::move(g.nodes[i]);
    for (Arg& a : n.args) renumber(a);
    for (auto& kv : n.kwargs) renumber(kv.second);
    for (; w < wraps.size() && wraps[w].node == i; ++w) {
      Node s;
      s.op = OpKind::CallFunction;
      s.name = "scalar_tensor";
      for (int k = 1; names.count(s.name); ++k) s.name = "scalar_tensor_" + std::to_string(k);
      names.insert(s.name);
      s.target = "aten::scalar_tensor.default";
      s.args = {n.args[wraps[w].arg]};
      s.kwargs = {{"dtype", Arg::dtype(std::string(dtype_name(wraps[w].dtype)))}};
      s.meta.stack = n.meta.stack;
      n.args[wraps[w].arg] = Arg::node(NodeId(nodes.size()));
      nodes.push_back(std::move(s));
    }
    new_id[i] = NodeId(nodes.size());
    nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
}

// Makes a graph PyTorch printed one Kiln's eager kernels run: prims ops its
// registry lacks become the ATen op that computes the same (the code
// generators treat them alike), and device arguments (factories of a CUDA
// graph: `full(..., device=cuda:0)`) become the CPU, where candidates run.
// The repro writers move devices to the one asked for again.
void arg_devices_to_cpu(Arg& a) {
  if (a.kind == Arg::Kind::Device && a.s != "cpu" && a.s != "meta") a.s = "cpu";
  for (Arg& item : a.items) arg_devices_to_cpu(item);
}

void legalize(Graph& g) {
  for (Node& n : g.nodes) {
    if (n.op != OpKind::CallFunction) continue;
    for (Arg& a : n.args) arg_devices_to_cpu(a);
    for (auto& kv : n.kwargs) arg_devices_to_cpu(kv.second);
    if (n.target != "prims::convert_element_type.default" || n.args.size() != 2 || !n.kwargs.empty()) continue;
    n.target = "aten::_to_copy.default";
    n.kwargs = {{"dtype", n.args[1]}};
    n.args.resize(1);
  }
}

}  // namespace

namespace {

// One pass of meta propagation; numbers that need wrapping are wrapped in
// the metas and listed in `wraps` for the caller to make nodes of.
Status annotate_pass(Candidate& c, std::vector<NumberWrap>& wraps, std::string* failed_node) {
  Graph& g = c.graph;
  std::vector<Value> metas(g.size());
  size_t next_input = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    Node& n = g.nodes[i];
    if (failed_node) *failed_node = n.name;  // left naming the node an error returns at
    if (n.op == OpKind::Placeholder) {
      if (next_input >= c.inputs.size())
        return Status::error("placeholder '" + n.name + "' has no input (" + std::to_string(c.inputs.size()) + " given)");
      const Tensor& t = c.inputs[next_input++];
      n.meta.val = Val::of_tensor(pipeline::tensor_meta_of(t));
      metas[i] = Value(meta_like(t));
      continue;
    }
    if (n.op != OpKind::CallFunction) continue;
    if (n.target == "operator.getitem" && n.args.size() == 2 && n.args[0].is_node() && n.args[1].kind == Arg::Kind::Int) {
      const Value& tuple = metas[size_t(n.args[0].node_id())];
      if (tuple.is_none() && n.meta.val.is_tensor()) {  // an item of an op Kiln does not know: as annotated
        metas[i] = meta_value_of(n.meta.val);
        continue;
      }
      if (tuple.is_none()) {
        const Node& producer = g[n.args[0].node_id()];
        return Status::error("node '" + n.name + "' reads an item of '" + producer.name + "' (" + producer.target +
                             "), whose result is not known: an op Kiln's registry does not have, with no annotation in the file");
      }
      if (!tuple.is_list() || n.args[1].i < 0 || size_t(n.args[1].i) >= tuple.to_list().size())
        return Status::error("node '" + n.name + "': getitem of a value that is not a tuple of that length");
      metas[i] = tuple.to_list()[size_t(n.args[1].i)];
      n.meta.val = val_of(metas[i]);
      continue;
    }
    std::string unknown_input;
    auto node_value = [&](NodeId id) -> std::optional<Value> {
      if (metas[size_t(id)].is_none()) {
        if (unknown_input.empty()) unknown_input = g[id].name + "' (" + g[id].target;
        return std::nullopt;
      }
      return metas[size_t(id)];
    };
    auto unknown = [&](const Status& s) {
      if (unknown_input.empty()) return Status::error("node '" + n.name + "': " + s.message());
      return Status::error("node '" + n.name + "' reads '" + unknown_input +
                           "'), whose result is not known: an op Kiln's registry does not have, with no annotation in the file");
    };
    ValueList args;
    KwargList kwargs;
    auto collect = [&]() -> Status {
      for (const Arg& a : n.args) {
        Expected<Value> v = pipeline::arg_value(a, node_value);
        if (!v) return unknown(v.status());
        args.push_back(std::move(*v));
      }
      for (const auto& [k, a] : n.kwargs) {
        Expected<Value> v = pipeline::arg_value(a, node_value);
        if (!v) return unknown(v.status());
        kwargs.emplace_back(k, std::move(*v));
      }
      return Status();
    };
    // Ops the registry does not have keep what the input file annotated, so
    // an oracle (real PyTorch) can still minify graphs that hold them.
    if (!op_registry().find(n.target) && !is_overload_packet(n.target)) {
      // An in-place op (relu_) or an out= overload returns the tensor it writes.
      const Arg* written = nullptr;
      std::optional<std::string> twin = pipeline::inplace_functional_twin(n.target);
      if (twin && !n.args.empty()) written = &n.args[0];
      // An in-place view (unsqueeze_) has its view's sizes, not self's.
      if (twin && pipeline::is_view_op(*twin)) {
        if (Status st = collect(); !st) return st;
        Expected<ValueList> r = call_meta(*twin, args, kwargs);
        if (!r) return Status::error("node '" + n.name + "' (" + n.target + "): " + r.status().message());
        metas[i] = as_meta((*r)[0]);
        n.meta.val = val_of(metas[i]);
        if (written->is_node()) metas[size_t(written->node_id())] = metas[i];
        continue;
      }
      if (pipeline::is_out_overload(n.target))
        for (const auto& [k, a] : n.kwargs)
          if (k == "out") written = &a;
      if (written && written->is_node() && metas[size_t(written->node_id())].is_tensor()) {
        metas[i] = metas[size_t(written->node_id())];
        n.meta.val = val_of(metas[i]);
      } else {
        metas[i] = meta_value_of(n.meta.val);
      }
      continue;
    }
    // torch.ops.aten.round(x), an overload packet: PyTorch picks the
    // overload by the arguments at each call; the graph names the one picked.
    if (Status st = collect(); !st) return st;
    if (is_overload_packet(n.target))
      if (std::optional<std::string> picked = packet_overload(n.target, args, kwargs)) n.target = *picked;
    Expected<ValueList> r = Status::error("");
    try {
      r = call_meta(n.target, args, kwargs);
    } catch (const Error& e) {
      r = Status::error(e.what());
    }
    if (!r) {
      if (std::optional<std::string> other = overload_taking(n.target, args, kwargs)) {
        n.target = *other;
        r = call_meta(n.target, args, kwargs);
      } else if (std::optional<ValueList> wrapped = meta_with_wrapped_numbers(n, i, args, kwargs, wraps)) {
        r = std::move(*wrapped);
      }
    }
    if (!r) return Status::error("node '" + n.name + "' (" + n.target + "): " + r.status().message());
    metas[i] = r->size() == 1 ? as_meta((*r)[0]) : as_meta(Value(*r));
    n.meta.val = val_of(metas[i]);
  }
  if (failed_node) failed_node->clear();
  if (next_input != c.inputs.size())
    return Status::error(std::to_string(c.inputs.size()) + " inputs for " + std::to_string(next_input) + " placeholders");
  return Status();
}

}  // namespace

Status annotate(Candidate& c, std::string* failed_node) {
  legalize(c.graph);
  std::vector<NumberWrap> wraps;
  Status s = annotate_pass(c, wraps, failed_node);
  if (!s || wraps.empty()) return s;
  insert_number_wrappers(c.graph, wraps);
  wraps.clear();
  return annotate_pass(c, wraps, failed_node);
}

namespace {

template <class T>
auto float_or_value(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return float(v);
  else return v;
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

// Calls fn(pointer, bytes) for the tensor's memory in row-major order, one
// call per run of elements that lie next to each other (the whole tensor
// when it is contiguous): a 600-op graph's recorded inputs are hundreds of
// megabytes, hashed and copied on every candidate, and a call per element
// made that the minifier's main cost.
void for_each_run(const Tensor& t, const std::function<void(const char*, size_t)>& fn) {
  const char* base = static_cast<const char*>(t.raw_data());
  const size_t item = t.itemsize();
  const int64_t n = t.numel();
  if (n == 0) return;
  if (t.is_contiguous()) {
    fn(base, size_t(n) * item);
    return;
  }
  const size_t dims = size_t(t.dim());
  // The innermost dimension is one run when its stride is 1; else each element is.
  const bool inner_run = dims > 0 && t.strides()[dims - 1] == 1;
  const size_t outer_dims = inner_run ? dims - 1 : dims;
  const size_t run_bytes = inner_run ? size_t(t.sizes()[dims - 1]) * item : item;
  if (run_bytes == 0) return;
  std::vector<int64_t> index(outer_dims, 0);
  for (int64_t k = 0, runs = n / int64_t(run_bytes / item); k < runs; ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < outer_dims; ++d) off += index[d] * t.strides()[d];
    fn(base + off * int64_t(item), run_bytes);
    for (size_t d = outer_dims; d-- > 0;) {
      if (++index[d] < t.sizes()[d]) break;
      index[d] = 0;
    }
  }
}

// A 64-bit hash of a byte stream fed in pieces, eight bytes at a time
// (murmur-style multiply and rotate); pieces need not be word-aligned.
struct StreamHash {
  uint64_t h = 0x27d4eb2f165667c5ULL, length = 0, pending = 0;
  int pending_bytes = 0;
  static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  void word(uint64_t w) {
    h ^= rotl(w * 0x87c37b91114253d5ULL, 31) * 0x4cf5ad432745937fULL;
    h = rotl(h, 27) * 5 + 0x52dce729;
  }
  void feed(const char* p, size_t bytes) {
    length += bytes;
    while (bytes && pending_bytes) {
      pending |= uint64_t(uint8_t(*p++)) << (8 * pending_bytes);
      --bytes;
      if (++pending_bytes == 8) {
        word(pending);
        pending = 0;
        pending_bytes = 0;
      }
    }
    for (; bytes >= 8; p += 8, bytes -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      word(w);
    }
    for (; bytes; --bytes) pending |= uint64_t(uint8_t(*p++)) << (8 * pending_bytes++);
  }
  uint64_t finish() {
    if (pending_bytes) word(pending);
    uint64_t x = h ^ length;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
  }
};

}  // namespace

uint64_t candidate_key(const Candidate& c) {
  uint64_t h = structural_hash(c.graph);
  for (const Tensor& t : c.inputs) {
    h = mix(h, uint64_t(t.dtype()));
    for (int64_t s : t.sizes()) h = mix(h, uint64_t(s));
    StreamHash bytes;
    for_each_run(t, [&](const char* p, size_t n) { bytes.feed(p, n); });
    h = mix(h, bytes.finish());
  }
  return h;
}

std::vector<Arg> output_items(const Graph& g) {
  const Node* out = g.output();
  if (!out || out->args.empty()) return {};
  const Arg& r = out->args[0];
  if (r.kind == Arg::Kind::Tuple || r.kind == Arg::Kind::List) return r.items;
  return {r};
}

void set_outputs(Graph& g, std::vector<Arg> items) {
  for (Node& n : g.nodes)
    if (n.op == OpKind::Output) {
      n.args = {Arg::tuple(std::move(items))};
      n.meta.output_descs.clear();
    }
  g.pytree_out = false;
}

void prune(Candidate& c) {
  pipeline::eliminate_dead_code(c.graph, pipeline::PassContext{});
  std::vector<std::vector<NodeId>> users = compute_users(c.graph);
  std::vector<bool> remove(c.graph.size(), false);
  std::vector<Tensor> kept;
  size_t input = 0;
  bool any = false;
  for (size_t i = 0; i < c.graph.size(); ++i) {
    if (c.graph.nodes[i].op != OpKind::Placeholder) continue;
    if (users[i].empty()) {
      remove[i] = true;
      any = true;
    } else {
      kept.push_back(c.inputs[input]);
    }
    ++input;
  }
  if (!any) return;
  remove_nodes(c.graph, remove);
  c.inputs = std::move(kept);
}

void reorder_placeholders_first(Candidate& c) {
  Graph& g = c.graph;
  std::vector<NodeId> order;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.nodes[i].op == OpKind::Placeholder) order.push_back(NodeId(i));
  for (size_t i = 0; i < g.size(); ++i)
    if (g.nodes[i].op != OpKind::Placeholder && g.nodes[i].op != OpKind::Output) order.push_back(NodeId(i));
  for (size_t i = 0; i < g.size(); ++i)
    if (g.nodes[i].op == OpKind::Output) order.push_back(NodeId(i));
  bool same = true;
  for (size_t i = 0; i < order.size(); ++i) same &= order[i] == NodeId(i);
  if (same) return;
  std::vector<NodeId> new_id(g.size());
  for (size_t i = 0; i < order.size(); ++i) new_id[size_t(order[i])] = NodeId(i);
  std::function<void(Arg&)> renumber = [&](Arg& a) {
    if (a.kind == Arg::Kind::Node) a.i = new_id[size_t(a.i)];
    for (Arg& item : a.items) renumber(item);
  };
  std::vector<Node> nodes;
  nodes.reserve(g.size());
  for (NodeId id : order) {
    Node n = std::move(g.nodes[size_t(id)]);
    for (Arg& a : n.args) renumber(a);
    for (auto& kv : n.kwargs) renumber(kv.second);
    nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
}

Tensor compact_copy(const Tensor& t) {
  Tensor out = Tensor::empty(t.sizes(), t.dtype());
  char* dst = static_cast<char*>(out.raw_data());
  for_each_run(t, [&](const char* p, size_t bytes) {
    std::memcpy(dst, p, bytes);
    dst += bytes;
  });
  return out;
}

namespace {

template <class F>
void dispatch(DType d, F&& f) {
  switch (d) {
    case DType::Bool: f(bool{}); break;
    case DType::UInt8: f(uint8_t{}); break;
    case DType::Int8: f(int8_t{}); break;
    case DType::Int16: f(int16_t{}); break;
    case DType::Int32: f(int32_t{}); break;
    case DType::Int64: f(int64_t{}); break;
    case DType::Float16: f(Half{}); break;
    case DType::BFloat16: f(BFloat16{}); break;
    case DType::Float32: f(float{}); break;
    case DType::Float64: f(double{}); break;
  }
}

}  // namespace

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> out;
  out.reserve(size_t(t.numel()));
  dispatch(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    for_each_run(t, [&](const char* p, size_t bytes) {
      for (size_t at = 0; at < bytes; at += sizeof(T)) {
        T v;
        std::memcpy(&v, p + at, sizeof(T));
        out.push_back(double(float_or_value(v)));
      }
    });
  });
  return out;
}

Tensor from_doubles(const std::vector<double>& values, const Shape& sizes, DType dtype) {
  Tensor out = Tensor::empty(sizes, dtype);
  dispatch(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = static_cast<T*>(out.raw_data());
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) p[i] = T(float(values[i]));
      else p[i] = T(values[i]);
    }
  });
  return out;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  Tensor ca = compact_copy(a), cb = compact_copy(b);
  return std::memcmp(ca.raw_data(), cb.raw_data(), size_t(ca.numel()) * ca.itemsize()) == 0;
}

std::string unique_name(const Graph& g, const std::string& base) {
  if (g.find(base) == kNoNode) return base;
  for (int k = 1;; ++k) {
    std::string name = base + "_" + std::to_string(k);
    if (g.find(name) == kNoNode) return name;
  }
}

Expected<Candidate> candidate_from_text(const std::string& text, std::vector<Tensor> inputs, const std::string& where) {
  Expected<Graph> g = parse_graph_module(text, where);
  if (!g) return g.status();
  Candidate c{std::move(*g), std::move(inputs)};
  if (Status s = annotate(c); !s) return Status::error(where + ": " + s.message());
  return c;
}

}  // namespace kiln::minify
