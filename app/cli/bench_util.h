#pragma once
// What every `kiln-cli bench` suite measures with: medians, wall-clock timing
// and seeded random inputs, so the suites agree on how a figure is taken.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln::cli {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Wall milliseconds of one call of `f`.
template <class F>
double time_ms(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Uniform in [-scale, scale], drawn in float32 and then converted to `dtype`.
inline Tensor random_tensor(Shape sizes, uint32_t seed, DType dtype = DType::Float32, float scale = 2.f) {
  Tensor t = Tensor::empty(std::move(sizes), DType::Float32);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t.to(dtype);
}

// This kiln-cli, for suites that measure in a fresh process of their own.
inline std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find this executable: " + ec.message());
  return p.string();
}

// Runs a shell command line whose standard output is one JSON object; a
// failed run or other output is an Error naming `what`.
inline nlohmann::json run_child_json(const std::string& command, const std::string& what) {
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) throw Error("cannot start " + what);
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = ::pclose(p);
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (rc != 0 || !j.is_object()) throw Error(what + " failed (exit " + std::to_string(rc) + "): " + out);
  return j;
}

}  // namespace kiln::cli
