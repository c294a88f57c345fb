// _kiln_numpy: the parts of Kiln's NumPy subset (numpy_prelude*.cpp) whose
// numbers must be NumPy's bit for bit and that the Python subset cannot
// express quickly: Dragon4 float formatting as numpy.core.arrayprint calls it,
// NumPy's summation order (pairwise blocks of 8192) and its sequential
// products and accumulations, and the legacy
// RandomState's draws from MT19937.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "core/python/mt19937.h"
#include "core/python/numpy_bridge.h"
#include "core/python/stdlib.h"
#include "core/python/torch_convert.h"
#include "core/python/vm.h"
#include "core/tensor/half.h"

namespace kiln::py {

namespace {

// ---- float formatting ----

// A finite non-negative value as decimal digits d[0].d[1..] x 10^exp ("0", 0
// for zero); trailing zeros are kept only where the caller asked for digits.
struct Decimal {
  std::string digits;
  int exp = 0;
};

Decimal parse_sci(const char* s) {
  Decimal d;
  const char* e = std::strchr(s, 'e');
  for (const char* p = s; p != e; ++p)
    if (*p != '.') d.digits += *p;
  d.exp = std::atoi(e + 1);
  return d;
}

double round_to_bits(double x, int bits) {
  if (bits == 32) return double(float(x));
  if (bits == 16) return double(Half::to_float(Half::from_float(float(x))));
  return x;
}

// The shortest digits that read back as the same float of `bits` bits (the
// closest such when several are shortest): NumPy's Dragon4 in unique mode.
Decimal shortest(double x, int bits) {
  char buf[64];
  if (bits == 64 || bits == 32) {
    auto r = bits == 64 ? std::to_chars(buf, buf + sizeof buf - 1, x, std::chars_format::scientific)
                        : std::to_chars(buf, buf + sizeof buf - 1, float(x), std::chars_format::scientific);
    *r.ptr = 0;
    return parse_sci(buf);
  }
  // float16 has at most 5 significant digits: the first correctly rounded
  // length that reads back is the shortest, and the closest of that length.
  for (int p = 0;; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p, x);
    if (round_to_bits(std::strtod(buf, nullptr), 16) == x || p >= 17) return parse_sci(buf);
  }
}

// The exact binary value correctly rounded (ties to even, as Dragon4's cutoff)
// to `frac` digits after the point, positional or scientific.
Decimal rounded(double x, int frac, bool scientific) {
  char buf[512];
  if (scientific) {
    std::snprintf(buf, sizeof buf, "%.*e", frac, x);
    return parse_sci(buf);
  }
  std::snprintf(buf, sizeof buf, "%.*f", frac, x);
  Decimal d;
  std::string s(buf);
  const size_t dot = s.find('.');
  std::string ip = s.substr(0, dot), fp = dot == std::string::npos ? "" : s.substr(dot + 1);
  std::string all = ip + fp;
  size_t lead = all.find_first_not_of('0');
  if (lead == std::string::npos) return Decimal{"0", 0};
  d.digits = all.substr(lead);
  d.exp = int(ip.size()) - 1 - int(lead);
  return d;
}

int frac_digits(const Decimal& d, bool scientific) {
  const int n = int(d.digits.size());
  return scientific ? n - 1 : std::max(0, n - 1 - d.exp);
}

// Dragon4's digit choice for format_float_positional/scientific: the unique
// (shortest) digits, cut at `precision` digits past the point, extended with
// the exact value's own digits up to `min_digits`; not unique: exactly
// `precision` digits.
Decimal choose_digits(double ax, int bits, int precision, bool unique, int min_digits, bool scientific) {
  if (!unique) return rounded(ax, precision, scientific);
  Decimal d = ax == 0 ? Decimal{"0", 0} : shortest(ax, bits);
  const int have = frac_digits(d, scientific);
  if (precision >= 0 && have > precision) return rounded(ax, precision, scientific);
  if (min_digits > have && ax != 0) return rounded(ax, min_digits, scientific);
  return d;
}

// trim: 'k' keeps zeros and the point, '.' drops trailing zeros, '0' keeps one
// zero after the point, '-' drops the point too.
void apply_trim(std::string& frac, char trim, int min_digits, bool& keep_point) {
  keep_point = true;
  if (trim != 'k') {
    while (!frac.empty() && frac.back() == '0' && int(frac.size()) > min_digits) frac.pop_back();
    if (trim == '0' && frac.empty()) frac = "0";
    if (trim == '-' && frac.empty()) keep_point = false;
  }
  while (int(frac.size()) < min_digits) frac += '0';
}

std::string pad_left_to(std::string s, int width) {
  if (int(s.size()) < width) s.insert(0, size_t(width) - s.size(), ' ');
  return s;
}

std::string format_positional(double x, int bits, int precision, bool unique, char trim, int min_digits, int pad_left,
                               int pad_right, bool sign_plus) {
  const bool neg = std::signbit(x);
  Decimal d = choose_digits(std::fabs(x), bits, precision, unique, min_digits, false);
  std::string ip, fp;
  if (d.exp >= 0) {
    ip = d.digits.substr(0, std::min(d.digits.size(), size_t(d.exp) + 1));
    while (int(ip.size()) < d.exp + 1) ip += '0';
    if (d.digits.size() > size_t(d.exp) + 1) fp = d.digits.substr(size_t(d.exp) + 1);
  } else {
    ip = "0";
    fp = std::string(size_t(-d.exp - 1), '0') + d.digits;
  }
  if (d.digits == "0") fp.clear();
  if (!unique)
    while (int(fp.size()) < precision) fp += '0';
  bool point;
  apply_trim(fp, trim, min_digits, point);
  std::string s = (neg ? "-" : sign_plus ? "+" : "") + ip;
  s = pad_left_to(s, pad_left);
  if (point) s += "." + fp;
  if (pad_right > int(fp.size())) s += std::string(size_t(pad_right) - fp.size(), ' ');
  return s;
}

std::string format_scientific(double x, int bits, int precision, bool unique, char trim, int min_digits, int pad_left,
                              int exp_digits, bool sign_plus) {
  const bool neg = std::signbit(x);
  Decimal d = choose_digits(std::fabs(x), bits, precision, unique, min_digits, true);
  if (d.digits == "0") d.exp = 0;
  std::string ip = d.digits.substr(0, 1), fp = d.digits.substr(1);
  if (!unique)
    while (int(fp.size()) < precision) fp += '0';
  bool point;
  apply_trim(fp, trim, min_digits, point);
  std::string s = pad_left_to((neg ? "-" : sign_plus ? "+" : "") + ip, pad_left);
  if (point) s += "." + fp;
  std::string e = std::to_string(std::abs(d.exp));
  const int width = exp_digits < 0 ? 2 : std::max(1, exp_digits);
  if (int(e.size()) < width) e.insert(0, size_t(width) - e.size(), '0');
  return s + "e" + (d.exp < 0 ? "-" : "+") + e;
}

// ---- NumPy's summation order ----

// NumPy's pairwise_sum (loops_utils.h): 8 accumulators over blocks of up to
// 128, halves above that; T is the accumulator (float for float32 arrays).
template <class T>
T pairwise(const T* a, int64_t n, int64_t stride) {
  if (n < 8) {
    T res = 0;
    for (int64_t i = 0; i < n; ++i) res += a[i * stride];
    return res;
  }
  if (n <= 128) {
    T r[8];
    for (int k = 0; k < 8; ++k) r[k] = a[k * stride];
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int k = 0; k < 8; ++k) r[k] += a[(i + k) * stride];
    T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i * stride];
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise(a, n2, stride) + pairwise(a + n2 * stride, n - n2, stride);
}

// np.add.reduce over `reduced` axes as NumPy's iterator runs it (measured
// against numpy 1.24): axes in memory order (largest stride outermost); the
// innermost run of reduced axes is gathered in order and summed pairwise in
// chunks of the 8192-element buffer; the outer reduced axes add those partial
// sums into the output one after another.
//
// With `multiply`, np.multiply.reduce: NumPy multiplies one element after
// another (no pairwise loop), in the same iteration order. With `half`, the
// float partial sums are rounded to float16 after each buffer, as NumPy's
// float16 loop stores its accumulator.
template <class T>
Tensor numpy_sum(const Tensor& in, const std::vector<bool>& reduced, bool multiply = false, bool half = false) {
  const int64_t nd = in.dim();
  std::vector<int64_t> order;
  for (int64_t d = 0; d < nd; ++d)
    if (in.size(d) != 1) order.push_back(d);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return in.stride(a) > in.stride(b); });
  size_t n_outer = order.size();
  while (n_outer > 0 && reduced[size_t(order[n_outer - 1])]) --n_outer;
  std::vector<int64_t> outer(order.begin(), order.begin() + int64_t(n_outer)), inner(order.begin() + int64_t(n_outer), order.end());
  Shape out_sizes, out_strides_of_dim(size_t(nd), 0);
  for (int64_t d = 0; d < nd; ++d)
    if (!reduced[size_t(d)]) out_sizes.push_back(in.size(d));
  Tensor out = multiply ? Tensor::full(out_sizes, Scalar(1.0), in.dtype()) : Tensor::zeros(out_sizes, in.dtype());
  if (in.numel() == 0) return out;  // NumPy's identity (0, or 1 for a product)
  {
    int64_t s = 1;
    for (int64_t d = nd - 1; d >= 0; --d)
      if (!reduced[size_t(d)]) {
        out_strides_of_dim[size_t(d)] = s;
        s *= in.size(d);
      }
  }
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  int64_t run_len = 1;
  for (int64_t d : inner) run_len *= in.size(d);
  std::vector<T> run(size_t(std::max<int64_t>(run_len, 1)));
  std::vector<int64_t> oi(outer.size(), 0), ii(inner.size(), 0);
  for (;;) {
    int64_t base = 0, obase = 0;
    for (size_t k = 0; k < outer.size(); ++k) {
      base += oi[k] * in.stride(outer[k]);
      obase += oi[k] * out_strides_of_dim[size_t(outer[k])];
    }
    // Gather the inner run in iteration order (the buffer NumPy copies into).
    std::fill(ii.begin(), ii.end(), 0);
    for (int64_t r = 0; r < run_len; ++r) {
      int64_t off = base;
      for (size_t k = 0; k < inner.size(); ++k) off += ii[k] * in.stride(inner[k]);
      run[size_t(r)] = src[off];
      for (size_t k = inner.size(); k-- > 0;) {
        if (++ii[k] < in.size(inner[k])) break;
        ii[k] = 0;
      }
    }
    T acc = dst[obase];
    if (multiply) {
      for (int64_t r = 0; r < run_len; ++r) acc *= run[size_t(r)];
    } else {
      for (int64_t c = 0; c < run_len; c += 8192) {
        acc += pairwise(run.data() + c, std::min<int64_t>(8192, run_len - c), 1);
        if (half) acc = T(round_to_bits(double(acc), 16));
      }
    }
    dst[obase] = acc;
    size_t k = outer.size();
    for (; k-- > 0;) {
      if (++oi[k] < in.size(outer[k])) break;
      oi[k] = 0;
    }
    if (k == size_t(-1)) break;
  }
  return out;
}

// np.add.accumulate / np.multiply.accumulate along `axis`: each line one
// element after another in T (float32 arrays in float, not PyTorch's double),
// rounded to float16 at every step for float16 arrays.
template <class T>
Tensor numpy_accumulate(const Tensor& in, int64_t axis, bool multiply, bool half) {
  Tensor out = in.contiguous().clone();
  if (out.numel() == 0) return out;
  T* p = out.data<T>();
  const int64_t n = out.size(axis);
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < out.dim(); ++d) inner *= out.size(d);
  const int64_t outer = out.numel() / (n * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      T* line = p + o * n * inner + i;
      for (int64_t k = 1; k < n; ++k) {
        T v = multiply ? line[(k - 1) * inner] * line[k * inner] : line[(k - 1) * inner] + line[k * inner];
        line[k * inner] = half ? T(round_to_bits(double(v), 16)) : v;
      }
    }
  return out;
}

// ---- the legacy RandomState ----

struct LegacyState {
  MersenneTwister mt;
  bool has_gauss = false;
  double gauss = 0;

  uint64_t next64() {
    uint64_t hi = mt.genrand();
    return (hi << 32) | mt.genrand();
  }
  double next_double() { return mt.random(); }
  // legacy_gauss: Marsaglia's polar method, the second value kept for the next call.
  double next_gauss() {
    if (has_gauss) {
      has_gauss = false;
      double g = gauss;
      gauss = 0;
      return g;
    }
    double x1, x2, r2;
    do {
      x1 = 2.0 * next_double() - 1.0;
      x2 = 2.0 * next_double() - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    gauss = f * x1;
    has_gauss = true;
    return f * x2;
  }
  static uint64_t mask_of(uint64_t v) {
    for (int s : {1, 2, 4, 8, 16, 32}) v |= v >> s;
    return v;
  }
  // random_bounded_uint64_fill with use_masked (legacy randint): off + a value in [0, rng].
  uint64_t bounded(uint64_t rng) {
    if (rng == 0) return 0;
    if (rng <= 0xFFFFFFFFull) {
      if (rng == 0xFFFFFFFFull) return mt.genrand();
      const uint32_t mask = uint32_t(mask_of(rng));
      uint32_t v;
      while ((v = mt.genrand() & mask) > rng) {
      }
      return v;
    }
    if (rng == ~0ull) return next64();
    const uint64_t mask = mask_of(rng);
    uint64_t v;
    while ((v = next64() & mask) > rng) {
    }
    return v;
  }
  // random_interval (shuffle, permutation): a value in [0, max].
  uint64_t interval(uint64_t max) {
    if (max == 0) return 0;
    const uint64_t mask = mask_of(max);
    uint64_t v;
    if (max <= 0xFFFFFFFFull) {
      while ((v = (mt.genrand() & mask)) > max) {
      }
    } else {
      while ((v = (next64() & mask)) > max) {
      }
    }
    return v;
  }
};

int64_t count_arg(const Value& v) { return to_index(v, "count"); }

Value make_random_state() {
  auto st = std::make_shared<LegacyState>();
  st->mt.init_genrand(5489u);  // replaced by the seeding the Python side does at once
  return make_builtin("numpy.random._mt", [st](VM& vm, const CallArgs& a) -> Value {
    const std::string& op = as_str(a[0]);
    if (op == "seed_int") {
      st->mt.init_genrand(uint32_t(to_index(a[1], "seed")));
      st->has_gauss = false;
      st->gauss = 0;
      return Value();
    }
    if (op == "seed_array") {
      std::vector<uint32_t> key;
      for (const Value& w : vm.to_vector(a[1])) key.push_back(uint32_t(to_index(w, "seed")));
      st->mt.init_by_array(key);
      st->has_gauss = false;
      st->gauss = 0;
      return Value();
    }
    if (op == "seed_os") {  // seed(None): fresh entropy, as NumPy's
      std::random_device rd;
      std::vector<uint32_t> key;
      for (int i = 0; i < 8; ++i) key.push_back(rd());
      st->mt.init_by_array(key);
      st->has_gauss = false;
      st->gauss = 0;
      return Value();
    }
    if (op == "double") return Value(st->next_double());
    if (op == "gauss") return Value(st->next_gauss());
    if (op == "doubles" || op == "gausses") {
      const int64_t n = count_arg(a[1]);
      Tensor t = Tensor::empty({n}, DType::Float64);
      double* p = t.data<double>();
      for (int64_t i = 0; i < n; ++i) p[i] = op == "doubles" ? st->next_double() : st->next_gauss();
      return tensor_value(t);
    }
    if (op == "bounded") {  // (op, off, rng, count): int64 tensor
      const int64_t off = to_index(a[1], "low");
      const uint64_t rng = uint64_t(to_index(a[2], "range"));
      const int64_t n = count_arg(a[3]);
      Tensor t = Tensor::empty({n}, DType::Int64);
      int64_t* p = t.data<int64_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = int64_t(uint64_t(off) + st->bounded(rng));
      return tensor_value(t);
    }
    if (op == "shuffle_order") {
      // The Fisher-Yates swaps of legacy shuffle applied to 0..n-1: element k
      // of the shuffled sequence is element order[k] of the original.
      const int64_t n = count_arg(a[1]);
      Tensor t = Tensor::empty({n}, DType::Int64);
      int64_t* p = t.data<int64_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = i;
      for (int64_t i = n - 1; i >= 1; --i) std::swap(p[i], p[st->interval(uint64_t(i))]);
      return tensor_value(t);
    }
    if (op == "get_state") {
      ValueVec words;
      for (uint32_t w : st->mt.mt) words.push_back(Value(int64_t(w)));
      return tuple_value({list_value(std::move(words)), Value(int64_t(st->mt.index)), Value(st->has_gauss), Value(st->gauss)});
    }
    if (op == "set_state") {
      ValueVec words = vm.to_vector(a[1]);
      if (words.size() != size_t(MersenneTwister::N)) throw PyError("ValueError", "state must be 624 elements");
      for (int i = 0; i < MersenneTwister::N; ++i) st->mt.mt[size_t(i)] = uint32_t(to_index(words[size_t(i)], "state"));
      const int64_t pos = to_index(a[2], "pos");
      if (pos < 0 || pos > MersenneTwister::N) throw PyError("ValueError", "pos must be in [0, 624]");
      st->mt.index = int(pos);
      st->has_gauss = vm.truth(a[3]);
      st->gauss = to_double(a[4], "cached_gaussian");
      return Value();
    }
    throw PyError("SystemError", "numpy.random._mt: unknown operation " + op);
  });
}

int bits_arg(const Value& v) {
  const int64_t b = to_index(v, "bits");
  if (b != 16 && b != 32 && b != 64) throw PyError("ValueError", "bits must be 16, 32 or 64");
  return int(b);
}

char trim_arg(const Value& v) {
  const std::string& t = as_str(v);
  if (t.size() != 1 || std::string_view("k.0-").find(t[0]) == std::string_view::npos)
    throw PyError("ValueError", "trim must be one of 'k', '.', '0', '-'");
  return t[0];
}

}  // namespace

void load_kiln_numpy_generator(VM& vm, const Ref<Module>& m);  // numpy_generator_native.cpp

void load_kiln_numpy(VM& vm, const Ref<Module>& m) {
  // fmt_pos(x, bits, precision, unique, trim, min_digits, pad_left, pad_right, sign_plus)
  def_native(m, "fmt_pos", [](VM& vm, const CallArgs& a) {
    return str_value(format_positional(to_double(a[0], "x"), bits_arg(a[1]), int(to_index(a[2], "precision")),
                                       vm.truth(a[3]), trim_arg(a[4]), int(to_index(a[5], "min_digits")),
                                       int(to_index(a[6], "pad_left")), int(to_index(a[7], "pad_right")), vm.truth(a[8])));
  });
  // fmt_sci(x, bits, precision, unique, trim, min_digits, pad_left, exp_digits, sign_plus)
  def_native(m, "fmt_sci", [](VM& vm, const CallArgs& a) {
    return str_value(format_scientific(to_double(a[0], "x"), bits_arg(a[1]), int(to_index(a[2], "precision")),
                                       vm.truth(a[3]), trim_arg(a[4]), int(to_index(a[5], "min_digits")),
                                       int(to_index(a[6], "pad_left")), int(to_index(a[7], "exp_digits")), vm.truth(a[8])));
  });
  // The float of `bits` bits nearest x, as a Python float (exact).
  def_native(m, "round_to", [](VM&, const CallArgs& a) { return Value(round_to_bits(to_double(a[0], "x"), bits_arg(a[1]))); });
  // sum(tensor, reduced_axes): float32/float64 tensor summed in NumPy's order
  // over the given axes (kept axes in order, reduced ones dropped).
  // reduce(tensor, reduced_axes, op): op "add" or "multiply"; a float16
  // tensor is reduced in float with float16 partial sums, as NumPy's.
  def_native(m, "reduce", [](VM& vm, const CallArgs& a) {
    Tensor t = tensor_of(a[0], "numpy reduce");
    std::vector<bool> reduced(size_t(t.dim()), false);
    for (const Value& d : vm.to_vector(a[1])) reduced[size_t(to_index(d, "axis"))] = true;
    const bool multiply = as_str(a[2]) == "multiply";
    if (t.dtype() == DType::Float64) return tensor_value(numpy_sum<double>(t, reduced, multiply));
    if (t.dtype() == DType::Float32) return tensor_value(numpy_sum<float>(t, reduced, multiply));
    if (t.dtype() == DType::Float16)
      return tensor_value(numpy_sum<float>(t.to(DType::Float32), reduced, multiply, true).to(DType::Float16));
    throw PyError("SystemError", "numpy reduce of " + std::string(dtype_name(t.dtype())));
  });
  // accumulate(tensor, axis, op): cumsum / cumprod along one axis.
  def_native(m, "accumulate", [](VM&, const CallArgs& a) {
    Tensor t = tensor_of(a[0], "numpy accumulate");
    const int64_t axis = to_index(a[1], "axis");
    const bool multiply = as_str(a[2]) == "multiply";
    if (t.dtype() == DType::Float64) return tensor_value(numpy_accumulate<double>(t, axis, multiply, false));
    if (t.dtype() == DType::Float32) return tensor_value(numpy_accumulate<float>(t, axis, multiply, false));
    if (t.dtype() == DType::Float16)
      return tensor_value(numpy_accumulate<float>(t.to(DType::Float32), axis, multiply, true).to(DType::Float16));
    throw PyError("SystemError", "numpy accumulate of " + std::string(dtype_name(t.dtype())));
  });
  def_native(m, "random_state", [](VM&, const CallArgs&) { return make_random_state(); });
  load_kiln_numpy_generator(vm, m);
}

const Value* numpy_scalar_value(const Value& v, bool integers_only) {
  if (!v.is(ObjKind::Instance)) return nullptr;
  const Instance* inst = v.as<Instance>();
  const Value* kind = inst->cls->lookup("__kiln_number__");
  if (!kind || !kind->is(ObjKind::Str)) return nullptr;
  const std::string& k = kind->as<Str>()->s;
  if (integers_only && (k.empty() || (k[0] != 'i' && k[0] != 'u'))) return nullptr;
  return inst->dict->find_str("_v");
}

bool is_numpy_float64(const Value& v) {
  if (!v.is(ObjKind::Instance)) return false;
  const Value* kind = v.as<Instance>()->cls->lookup("__kiln_number__");
  return kind && kind->is(ObjKind::Str) && kind->as<Str>()->s == "f8";
}

TensorObj* ndarray_tensor(const Value& v, const char* what) {
  if (!v.is(ObjKind::Instance) || !v.as<Instance>()->cls->lookup("__kiln_ndarray__")) return nullptr;
  const Value* t = v.as<Instance>()->dict->find_str("_t");
  if (t) return tensor_obj(*t);
  std::string name = "?";
  if (const Value* dt = v.as<Instance>()->dict->find_str("_dt"); dt && dt->is(ObjKind::Instance))
    if (const Value* n = dt->as<Instance>()->dict->find_str("_str"); n && n->is(ObjKind::Str)) name = n->as<Str>()->s;
  if (!name.empty() && name[0] == '<' && name.size() > 1 && name[1] == 'U')
    throw_unsupported(std::string(what) + " of a NumPy string array (dtype " + name + ")");
  const std::string torch_name = name == "<u2" ? "uint16" : name == "<u4" ? "uint32" : "uint64";
  throw_unsupported(std::string(what) + " of a numpy." + torch_name + " array (PyTorch 2.11 makes a torch." + torch_name +
                    " tensor, a dtype Kiln's tensors do not have; astype(np.int64) first)");
}

Value tensor_to_ndarray(VM& vm, const Value& t) {
  TensorObj* obj = tensor_obj(t);
  if (!obj) throw_type_error("numpy() expects a tensor");
  if (obj->fake || obj->t.is_meta()) throw_unsupported("Tensor.numpy() inside a torch.compile'd function (Kiln does not trace NumPy)");
  if (obj->requires_grad)
    throw PyError("RuntimeError", "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
  if (obj->device != "cpu")
    throw PyError("TypeError", "can't convert " + obj->device +
                                   " device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.");
  Ref<Module> np = vm.module("numpy");
  const Value* from_tensor = np ? np->dict->find_str("_from_tensor") : nullptr;
  if (!from_tensor) throw PyError("SystemError", "Kiln's numpy module has no _from_tensor");
  // A new tensor object over the same storage: the array and the tensor share
  // memory, as PyTorch's, while the array never takes part in autograd.
  return vm.call(*from_tensor, ValueVec{Value(make<TensorObj>(obj->t))});
}

}  // namespace kiln::py
