#include "core/graph/hash.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

namespace kiln {

namespace {

class Hasher {
 public:
  void u64(uint64_t x) {
    // splitmix64's finalizer over the running state: cheap and well mixed.
    h_ ^= x + 0x9e3779b97f4a7c15ULL + (h_ << 6) + (h_ >> 2);
    h_ = (h_ ^ (h_ >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h_ = (h_ ^ (h_ >> 27)) * 0x94d049bb133111ebULL;
    h_ ^= h_ >> 31;
  }
  void str(std::string_view s) {
    uint64_t f = 0xcbf29ce484222325ULL;  // FNV-1a
    for (unsigned char c : s) f = (f ^ c) * 0x100000001b3ULL;
    u64(s.size());
    u64(f);
  }
  void real(double v) {
    if (std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    u64(bits);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0x6b696c6e67726170ULL;
};

void hash_arg(Hasher& h, const Arg& a) {
  h.u64(uint64_t(a.kind));
  switch (a.kind) {
    case Arg::Kind::Bool: h.u64(a.b); break;
    case Arg::Kind::Int:
      h.u64(uint64_t(a.i));
      h.str(a.s);
      break;
    case Arg::Kind::Float: h.real(a.f); break;
    case Arg::Kind::Node: h.u64(uint64_t(a.i)); break;
    default: h.str(a.s); break;
  }
  h.u64(a.items.size());
  for (const Arg& item : a.items) hash_arg(h, item);
}

void hash_sizes(Hasher& h, const std::vector<SymInt>& sizes) {
  h.u64(sizes.size());
  for (const SymInt& s : sizes) {
    h.u64(uint64_t(s.value));
    h.str(s.expr);
  }
}

void hash_val(Hasher& h, const Val& v) {
  switch (v.kind) {
    case Val::Kind::Tensor:
      h.u64(1);
      h.str(v.tensor.dtype);
      hash_sizes(h, v.tensor.sizes);
      break;
    case Val::Kind::Sym:
      h.u64(2);
      h.str(v.text);
      break;
    case Val::Kind::Text:
      h.u64(3);
      h.str(v.text);
      break;
    default: h.u64(0); break;
  }
}

void hash_node(Hasher& h, const Node& n) {
  h.u64(uint64_t(n.op));
  h.str(n.op == OpKind::Placeholder ? std::string_view{} : std::string_view(n.target));
  h.u64(n.args.size());
  for (const Arg& a : n.args) hash_arg(h, a);
  std::vector<const std::pair<std::string, Arg>*> kwargs;
  for (const auto& kv : n.kwargs) kwargs.push_back(&kv);
  std::sort(kwargs.begin(), kwargs.end(), [](auto* x, auto* y) { return x->first < y->first; });
  h.u64(kwargs.size());
  for (const auto* kv : kwargs) {
    h.str(kv->first);
    hash_arg(h, kv->second);
  }
  hash_val(h, n.meta.val);
}

}  // namespace

uint64_t structural_hash(const Graph& g) {
  Hasher h;
  h.u64(g.nodes.size());
  for (const Node& n : g.nodes) hash_node(h, n);
  h.u64(g.subgraphs.size());
  for (const Subgraph& s : g.subgraphs) {
    h.str(s.name);
    h.u64(structural_hash(s.graph));
  }
  return h.value();
}

}  // namespace kiln
