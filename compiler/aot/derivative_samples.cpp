// The sample notation, one op call per spec, arguments separated by spaces:
//   f[3,4]   float64 tensor, uniform in (-1, 1)         f[] is 0-d
//   s[3,4]   float64, |x| in (0.3, 1), either sign (away from kinks at 0)
//   p[3,4]   float64, uniform in (0.5, 2)              (positive)
//   u[3,4]   float64, uniform in (0.05, 0.95)          (probabilities)
//   g[3,4]   float64, uniform in (1.1, 2)              (greater than 1)
//   i[3]<5   int64 in [0, 5)        I[3]<5  distinct int64 in [0, 5)
//   S[3]<5   distinct and sorted int64 in [0, 5)
//   b[3,4]   bool
//   H[2,3,3] float64 symmetric positive definite (R R^T + n/2 I, R as f); the
//            finite differences perturb (i, j) and (j, i) together
//   L[3,3]   float64 lower triangular, diagonal in (1, 2), the rest in (-0.5, 0.5);
//   U[3,3]   upper: only the triangle the op reads is perturbed
//   3  -1  2.5  true  false  None  'str'  [1,2]  [1.5,2.0]  dt:float32
//   {f[2] f[3]}  a Tensor[] (None allowed inside)
//   name=value   a keyword argument
#include "compiler/aot/derivative_samples.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <numeric>
#include <random>

#include "core/util/status.h"

namespace kiln::aot {

// The table: op -> specs (derivative_sample_table.cpp).
const std::vector<std::pair<const char*, std::vector<const char*>>>& derivative_sample_table();

namespace {

class SpecParser {
 public:
  SpecParser(std::string_view spec, uint64_t seed) : s_(spec), rng_(seed) {}

  DerivativeSample parse() {
    DerivativeSample out;
    out.spec = std::string(s_);
    skip_space();
    while (pos_ < s_.size()) {
      size_t eq = keyword_end();
      if (eq != std::string_view::npos) {
        std::string name(s_.substr(pos_, eq - pos_));
        pos_ = eq + 1;
        out.kwargs.emplace_back(name, value());
      } else {
        KILN_CHECK(out.kwargs.empty(), "positional argument after keywords in sample '", s_, "'");
        structure_ = 0;
        out.args.push_back(value());
        out.structure.push_back(structure_);
      }
      skip_space();
    }
    return out;
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  // The '=' of "name=" at pos_, or npos.
  size_t keyword_end() const {
    size_t i = pos_;
    while (i < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i])) || s_[i] == '_')) ++i;
    return i > pos_ && i < s_.size() && s_[i] == '=' ? i : std::string_view::npos;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void expect(char c) {
    KILN_CHECK(peek() == c, "expected '", c, "' at ", pos_, " in sample '", s_, "'");
    ++pos_;
  }
  std::string word() {
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ' ' && s_[pos_] != '}' && s_[pos_] != ']' && s_[pos_] != ',') ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }
  std::vector<int64_t> int_list() {
    expect('[');
    std::vector<int64_t> v;
    while (peek() != ']') {
      v.push_back(std::stoll(word()));
      if (peek() == ',') ++pos_;
    }
    expect(']');
    return v;
  }

  // [1,2] is an int list, [1.5,2.0] a float list.
  Value number_list() {
    expect('[');
    ValueList items;
    bool floats = false;
    std::vector<std::string> words;
    while (peek() != ']') {
      words.push_back(word());
      floats |= words.back().find_first_of(".e") != std::string::npos;
      if (peek() == ',') ++pos_;
    }
    expect(']');
    for (const std::string& w : words) {
      if (floats) items.emplace_back(std::stod(w));
      else items.emplace_back(int64_t(std::stoll(w)));
    }
    return Value(std::move(items));
  }

  Value value() {
    char c = peek();
    if (c == '[') return number_list();
    if (c == '{') {
      ++pos_;
      ValueList items;
      skip_space();
      while (peek() != '}') {
        items.push_back(value());
        skip_space();
      }
      expect('}');
      return Value(std::move(items));
    }
    if (c == '\'') {
      size_t end = s_.find('\'', pos_ + 1);
      KILN_CHECK(end != std::string_view::npos, "unterminated string in sample '", s_, "'");
      std::string str(s_.substr(pos_ + 1, end - pos_ - 1));
      pos_ = end + 1;
      return Value(str);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) && pos_ + 1 < s_.size() && s_[pos_ + 1] == '[') return tensor();
    std::string w = word();
    if (w == "None") return Value();
    if (w == "true") return Value(true);
    if (w == "false") return Value(false);
    if (w.rfind("dt:", 0) == 0) {
      auto t = dtype_from_name(w.substr(3));
      KILN_CHECK(t, "bad dtype in sample '", s_, "'");
      return Value(*t);
    }
    KILN_CHECK(!w.empty(), "empty value at ", pos_, " in sample '", s_, "'");
    if (w.find_first_of(".einf") != std::string::npos) return Value(std::stod(w));
    return Value(int64_t(std::stoll(w)));
  }

  Value tensor() {
    char kind = s_[pos_++];
    Shape shape = int_list();
    int64_t n = shape_numel(shape);
    int64_t bound = 0;
    if (peek() == '<') {
      ++pos_;
      bound = std::stoll(word());
    }
    auto uniform = [&](double lo, double hi) {
      std::vector<double> v(static_cast<size_t>(n));
      std::uniform_real_distribution<double> d(lo, hi);
      for (double& x : v) x = d(rng_);
      return Value(Tensor::from_vector(v, shape));
    };
    switch (kind) {
      case 'f': return uniform(-1.0, 1.0);
      case 'p': return uniform(0.5, 2.0);
      case 'u': return uniform(0.05, 0.95);
      case 'g': return uniform(1.1, 2.0);
      case 's': {
        std::vector<double> v(static_cast<size_t>(n));
        std::uniform_real_distribution<double> d(0.3, 1.0);
        for (double& x : v) x = (rng_() & 1 ? 1.0 : -1.0) * d(rng_);
        return Value(Tensor::from_vector(v, shape));
      }
      case 'H':
      case 'L':
      case 'U': {
        KILN_CHECK(shape.size() >= 2 && shape.back() == shape[shape.size() - 2], "'", kind,
                   "' needs square matrices in sample '", s_, "'");
        structure_ = kind;
        int64_t m = shape.back(), count = m == 0 ? 0 : n / (m * m);
        std::vector<double> v(static_cast<size_t>(n), 0.0);
        std::uniform_real_distribution<double> d(-1.0, 1.0), diag(1.0, 2.0);
        for (int64_t b = 0; b < count; ++b) {
          double* a = v.data() + b * m * m;
          if (kind == 'H') {
            std::vector<double> r(static_cast<size_t>(m * m));
            for (double& x : r) x = d(rng_);
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < m; ++j) {
                double dot = i == j ? 0.5 * double(m) : 0.0;
                for (int64_t k = 0; k < m; ++k) dot += r[size_t(i * m + k)] * r[size_t(j * m + k)];
                a[i * m + j] = dot;
              }
          } else {
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < m; ++j)
                if (i == j) a[i * m + j] = diag(rng_);
                else if (kind == 'L' ? j < i : j > i) a[i * m + j] = 0.5 * d(rng_);
          }
        }
        return Value(Tensor::from_vector(v, shape));
      }
      case 'b': {
        Tensor t = Tensor::empty(shape, DType::Bool);
        bool* p = t.data<bool>();
        for (int64_t i = 0; i < n; ++i) p[i] = rng_() & 1;
        return Value(t);
      }
      case 'i': {
        KILN_CHECK(bound > 0, "int tensor without a bound in sample '", s_, "'");
        std::vector<int64_t> v(static_cast<size_t>(n));
        for (int64_t& x : v) x = int64_t(rng_() % uint64_t(bound));
        return Value(Tensor::from_vector(v, shape));
      }
      case 'I':
      case 'S': {
        KILN_CHECK(bound >= n, "distinct ints need a bound >= count in sample '", s_, "'");
        std::vector<int64_t> all(static_cast<size_t>(bound));
        std::iota(all.begin(), all.end(), 0);
        std::shuffle(all.begin(), all.end(), rng_);
        all.resize(static_cast<size_t>(n));
        if (kind == 'S') std::sort(all.begin(), all.end());
        return Value(Tensor::from_vector(all, shape));
      }
    }
    KILN_CHECK(false, "unknown tensor kind '", kind, "' in sample '", s_, "'");
    return Value();
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::mt19937_64 rng_;
  char structure_ = 0;  // of the last tensor parsed
};

}  // namespace

DerivativeSample parse_sample(std::string_view spec, uint64_t seed) { return SpecParser(spec, seed).parse(); }

std::vector<DerivativeSample> derivative_samples(std::string_view op, uint64_t seed) {
  std::vector<DerivativeSample> out;
  for (const auto& [name, specs] : derivative_sample_table()) {
    if (op != name) continue;
    uint64_t base = std::hash<std::string_view>{}(op) ^ (seed * 0x9E3779B97F4A7C15ULL);
    for (size_t i = 0; i < specs.size(); ++i) out.push_back(parse_sample(specs[i], base + i));
  }
  return out;
}

std::vector<std::string> ops_with_samples() {
  std::vector<std::string> out;
  for (const auto& [name, specs] : derivative_sample_table()) out.push_back(name);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace kiln::aot
