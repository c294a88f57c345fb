#include "compare.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <sstream>
#include <vector>

namespace kiln::fuzz {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::vector<std::string> tokens(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

std::optional<double> number(const std::string& t) {
  if (t == "nan" || t == "-nan") return NAN;
  if (t == "inf") return INFINITY;
  if (t == "-inf") return -INFINITY;
  double v = 0;
  const char* begin = t.data() + (t.size() > 1 && t[0] == '+' ? 1 : 0);
  auto r = std::from_chars(begin, t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size()) return std::nullopt;
  return v;
}

bool close(double a, double b, const Tolerance& tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::abs(a - b) <= tol.atol + tol.rtol * std::max(std::abs(a), std::abs(b));
}

}  // namespace

std::string compare_outputs(const std::string& expected, const std::string& got, const Tolerance& tol) {
  std::vector<std::string> want = split(expected, '\n'), have = split(got, '\n');
  for (size_t i = 0; i < std::max(want.size(), have.size()); ++i) {
    const std::string where = "line " + std::to_string(i + 1);
    if (i >= want.size()) return where + ": extra line '" + have[i] + "'";
    if (i >= have.size()) return where + ": missing line '" + want[i] + "'";
    std::vector<std::string> a = tokens(want[i]), b = tokens(have[i]);
    if (a.size() != b.size()) return where + ": '" + want[i] + "' vs '" + have[i] + "'";
    // A tensor's line: an element that cancels to near zero carries the
    // rounding of the tensor's large elements, so the line's largest magnitude
    // also bounds the error (as comparing by norm does).
    double scale = 0;
    for (const std::string& t : a)
      if (std::optional<double> v = number(t); v && std::isfinite(*v)) scale = std::max(scale, std::abs(*v));
    for (size_t k = 0; k < a.size(); ++k) {
      if (a[k] == b[k]) continue;
      std::optional<double> x = number(a[k]), y = number(b[k]);
      if (x && y && (close(*x, *y, tol) || std::abs(*x - *y) <= tol.line_rtol * scale)) continue;
      return where + ", token " + std::to_string(k + 1) + " of '" + (a.empty() ? "" : a[0]) + "': " + a[k] + " vs " + b[k];
    }
  }
  return "";
}

std::pair<std::string, std::string> classify_run(const RunResult& reference, const RunResult& got, const Tolerance& tol) {
  if (got.timed_out) return {"timeout", got.status()};
  if (got.signal) return {"crash", got.status()};
  if (got.code != reference.code) {
    // The error's last line names it ("RuntimeError: ...").
    std::string err = got.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    std::string last = err.substr(err.rfind('\n') == std::string::npos ? 0 : err.rfind('\n') + 1);
    return {"error", got.status() + " where eager gave exit " + std::to_string(reference.code) + ": " + last};
  }
  std::string d = compare_outputs(reference.out, got.out, tol);
  if (!d.empty()) return {"wrong-output", d};
  return {"", ""};
}

}  // namespace kiln::fuzz
