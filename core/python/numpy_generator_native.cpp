// _kiln_numpy.pcg64() and seed_pool/seed_generate: the native half of
// numpy.random.Generator (numpy_prelude_generator.cpp holds the Python half).
// Everything whose bits come from the generator is made here, in NumPy's
// order; the Python side only validates, shapes and combines with
// parameters where the arithmetic is one IEEE operation per element.
#include <memory>
#include <random>
#include <unordered_set>

#include "core/python/numpy_pcg64.h"
#include "core/python/stdlib.h"
#include "core/python/torch_convert.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

std::vector<uint32_t> words_arg(VM& vm, const Value& v) {
  std::vector<uint32_t> out;
  for (const Value& w : vm.to_vector(v)) out.push_back(uint32_t(to_index(w, "word")));
  return out;
}

Value words_value(const std::vector<uint32_t>& w) {
  ValueVec out;
  for (uint32_t x : w) out.push_back(Value(int64_t(x)));
  return list_value(std::move(out));
}

// A 128-bit value as four 32-bit words, most significant first.
Value u128_words(unsigned __int128 v) {
  return words_value({uint32_t(v >> 96), uint32_t(v >> 64), uint32_t(v >> 32), uint32_t(v)});
}

unsigned __int128 u128_of(VM& vm, const Value& v) {
  const std::vector<uint32_t> w = words_arg(vm, v);
  if (w.size() != 4) throw PyError("ValueError", "PCG64 state words must be 4");
  unsigned __int128 r = 0;
  for (uint32_t x : w) r = (r << 32) | x;
  return r;
}

template <class F>
Value double_tensor(int64_t n, F&& draw) {
  Tensor t = Tensor::empty({n}, DType::Float64);
  double* p = t.data<double>();
  for (int64_t i = 0; i < n; ++i) p[i] = draw();
  return tensor_value(t);
}

Value make_pcg64() {
  auto g = std::make_shared<Pcg64>();
  return make_builtin("numpy.random._pcg64", [g](VM& vm, const CallArgs& a) -> Value {
    const std::string& op = as_str(a[0]);
    if (op == "seed") {  // (op, pool words)
      g->seed_from_pool(words_arg(vm, a[1]));
      return Value();
    }
    if (op == "random1") return Value(g->next_double());
    if (op == "normal1") return Value(g->standard_normal());
    if (op == "exponential1") return Value(g->standard_exponential());
    if (op == "exponential_inv1") return Value(-std::log1p(-g->next_double()));
    if (op == "random") return double_tensor(to_index(a[1], "count"), [&] { return g->next_double(); });
    if (op == "normal") return double_tensor(to_index(a[1], "count"), [&] { return g->standard_normal(); });
    if (op == "exponential") return double_tensor(to_index(a[1], "count"), [&] { return g->standard_exponential(); });
    if (op == "exponential_inv")
      return double_tensor(to_index(a[1], "count"), [&] { return -std::log1p(-g->next_double()); });
    if (op == "random_f") {
      const int64_t n = to_index(a[1], "count");
      Tensor t = Tensor::empty({n}, DType::Float32);
      float* p = t.data<float>();
      for (int64_t i = 0; i < n; ++i) p[i] = g->next_float();
      return tensor_value(t);
    }
    if (op == "int64" || op == "int32") {  // (op, low, high (closed), count)
      const int64_t low = to_index(a[1], "low"), high = to_index(a[2], "high"), n = to_index(a[3], "count");
      const uint64_t rng = uint64_t(high) - uint64_t(low);
      if (op == "int64") {
        Tensor t = Tensor::empty({n}, DType::Int64);
        int64_t* p = t.data<int64_t>();
        for (int64_t i = 0; i < n; ++i) p[i] = int64_t(uint64_t(low) + g->bounded64(rng));
        return tensor_value(t);
      }
      Tensor t = Tensor::empty({n}, DType::Int32);
      int32_t* p = t.data<int32_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = int32_t(uint32_t(low) + g->bounded32(uint32_t(rng)));
      return tensor_value(t);
    }
    if (op == "shuffle_order") {
      // The swaps of Generator.shuffle applied to 0..n-1: element k of the
      // shuffled sequence is element order[k] of the original.
      const int64_t n = to_index(a[1], "count");
      Tensor t = Tensor::empty({n}, DType::Int64);
      int64_t* p = t.data<int64_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = i;
      for (int64_t i = n - 1; i >= 1; --i) std::swap(p[i], p[g->interval(uint64_t(i))]);
      return tensor_value(t);
    }
    if (op == "choice_tail") {  // (op, pop, size): choice without replacement, large share of a large population
      const int64_t pop = to_index(a[1], "pop"), size = to_index(a[2], "size");
      std::vector<int64_t> idx(static_cast<size_t>(pop));
      for (int64_t i = 0; i < pop; ++i) idx[size_t(i)] = i;
      for (int64_t i = pop - 1; i >= std::max<int64_t>(pop - size, 1); --i)
        std::swap(idx[size_t(i)], idx[size_t(g->bounded64(uint64_t(i)))]);
      Tensor t = Tensor::empty({size}, DType::Int64);
      std::copy(idx.begin() + (pop - size), idx.end(), t.data<int64_t>());
      return tensor_value(t);
    }
    if (op == "choice_floyd") {  // (op, pop, size, shuffle)
      const int64_t pop = to_index(a[1], "pop"), size = to_index(a[2], "size");
      const bool shuffle = vm.truth(a[3]);
      Tensor t = Tensor::empty({size}, DType::Int64);
      int64_t* p = t.data<int64_t>();
      std::unordered_set<int64_t> seen;
      for (int64_t j = pop - size; j < pop; ++j) {
        const int64_t val = int64_t(g->bounded64(uint64_t(j)));
        const int64_t pick = seen.insert(val).second ? val : j;
        if (pick == j) seen.insert(j);
        p[j - pop + size] = pick;
      }
      if (shuffle)
        for (int64_t i = size - 1; i >= 1; --i) std::swap(p[i], p[g->bounded64(uint64_t(i))]);
      return tensor_value(t);
    }
    if (op == "get_state")
      return tuple_value({u128_words(g->state), u128_words(g->inc), Value(int64_t(g->has_uint32)), Value(int64_t(g->uinteger))});
    if (op == "set_state") {  // (op, state words, inc words, has_uint32, uinteger)
      g->state = u128_of(vm, a[1]);
      g->inc = u128_of(vm, a[2]);
      g->has_uint32 = to_index(a[3], "has_uint32") != 0;
      g->uinteger = uint32_t(to_index(a[4], "uinteger"));
      return Value();
    }
    throw PyError("SystemError", "numpy.random._pcg64: unknown operation " + op);
  });
}

}  // namespace

void load_kiln_numpy_generator(VM&, const Ref<Module>& m) {
  def_native(m, "pcg64", [](VM&, const CallArgs&) { return make_pcg64(); });
  // seed_pool(entropy words, pool_size): SeedSequence's mixed pool.
  def_native(m, "seed_pool", [](VM& vm, const CallArgs& a) {
    return words_value(SeedSequenceMix::pool(words_arg(vm, a[0]), size_t(to_index(a[1], "pool_size"))));
  });
  // seed_generate(pool words, n_words): SeedSequence.generate_state's uint32 words.
  def_native(m, "seed_generate", [](VM& vm, const CallArgs& a) {
    return words_value(SeedSequenceMix::generate(words_arg(vm, a[0]), size_t(to_index(a[1], "n_words"))));
  });
  // entropy_words(n): fresh OS entropy for SeedSequence(None).
  def_native(m, "entropy_words", [](VM&, const CallArgs& a) {
    std::random_device rd;
    std::vector<uint32_t> w(size_t(to_index(a[0], "n")));
    for (uint32_t& x : w) x = rd();
    return words_value(w);
  });
}

}  // namespace kiln::py
