// `kiln-cli bench scale`: how `kiln-cli stages` grows with the graph. Two
// generated graph texts per size (a chain of pointwise ops, each reading the
// last; a chain of diamonds, x -> sin, cos -> add), 2k, 20k and 200k nodes,
// each through a fresh `kiln-cli stages FILE --print-after none --codegen
// never` child (parsing, the graph passes, lowering, scheduling; no graph
// printed, no LLVM), timed on the wall clock with its peak memory. The ceiling
// is linear growth: the growth exponent log(t2/t1)/log(n2/n1) between
// neighbouring sizes, target under 1.2 from 20k to 200k, with 200k under 10 s
// and 2 GB. Machine code is left out because LLVM's cost per fused kernel
// (about 10 ms at -O3) would be all the figure shows; `stages` itself leaves
// it out past 500 kernels unless asked.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/cli/bench_util.h"
#include "app/cli/commands.h"
#include "core/util/output_text.h"
#include "core/util/status.h"

namespace kiln::cli {
namespace {

constexpr double kExponentTarget = 1.2;
constexpr double kLargestSecondsTarget = 10.0;
constexpr double kLargestMemoryTarget = 2.0 * (1 << 30);

// A print_readable graph of about `nodes` op nodes on two f32[64, 64] inputs.
std::string generated_graph(const std::string& kind, int64_t nodes) {
  std::string out = "class GraphModule(torch.nn.Module):\n"
                    "    def forward(self, arg0_1: \"f32[64, 64]\", arg1_1: \"f32[64, 64]\"):\n";
  // One line: "        NAME: "f32[64, 64]" = torch.ops.aten.OP(ARGS)". Appended piece by
  // piece: GCC 12 warns (-Wrestrict, wrongly) about "v" + std::to_string(i).
  auto line = [&](char prefix, int64_t i, const char* op, const std::string& args) {
    out += "        ";
    out += prefix;
    out += std::to_string(i);
    out += ": \"f32[64, 64]\" = torch.ops.aten.";
    out += op;
    out += '(';
    out += args;
    out += ")\n";
  };
  auto name = [](char prefix, int64_t i) {
    std::string n(1, prefix);
    n += std::to_string(i);
    return n;
  };
  std::string last = "arg0_1";
  if (kind == "chain") {
    for (int64_t i = 0; i < nodes; ++i) {
      switch (i % 4) {
        case 0: line('v', i, "sin.default", last); break;
        case 1: line('v', i, "mul.Tensor", last + ", arg1_1"); break;
        case 2: line('v', i, "add.Tensor", last + ", 1.0"); break;
        default: line('v', i, "relu.default", last); break;
      }
      last = name('v', i);
    }
  } else {
    for (int64_t i = 0; i + 3 <= nodes; i += 3) {
      line('s', i, "sin.default", last);
      line('c', i, "cos.default", last);
      line('a', i, "add.Tensor", name('s', i) + ", " + name('c', i));
      last = name('a', i);
    }
  }
  out += "        return (";
  out += last;
  out += ",)\n";
  return out;
}

struct ChildRun {
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // user + system: what the figure is on a machine shared with other work
  double peak_bytes = 0;
};

// This executable's `stages` on `path`, in a child: wall time and peak RSS.
ChildRun run_stages_child(const std::string& self, const std::string& path) {
  std::fflush(stdout);  // else the child writes out the parent's buffered lines again
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) throw Error("bench scale: fork failed");
  if (pid == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    if (null < 0 || ::dup2(null, STDOUT_FILENO) < 0) ::_exit(127);
    ::execl(self.c_str(), self.c_str(), "stages", path.c_str(), "--print-after", "none", "--codegen", "never",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (::wait4(pid, &status, 0, &usage) != pid) throw Error("bench scale: lost the stages child");
  ChildRun r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.peak_bytes = double(usage.ru_maxrss) * 1024;
  auto secs = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  r.cpu_seconds = secs(usage.ru_utime) + secs(usage.ru_stime);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("bench scale: `kiln-cli stages " + path + "` failed (status " + std::to_string(status) + ")");
  return r;
}

}  // namespace

int run_scale_bench(int reps, const std::vector<int64_t>& sizes, bool json) {
  if (reps == 0) reps = 3;
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw Error("bench scale: cannot find this executable: " + ec.message());
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kiln-bench-scale-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  struct RemoveDir {
    std::filesystem::path p;
    ~RemoveDir() {
      std::error_code ignored;
      std::filesystem::remove_all(p, ignored);
    }
  } cleanup{dir};

  nlohmann::json doc = {{"rows", nlohmann::json::array()}, {"reps", reps}};
  if (!json)
    std::printf("kiln-cli stages --codegen never on generated graphs, median of %d\n%-8s %8s %10s %10s %10s %10s %9s\n",
                reps, "graph", "nodes", "seconds", "cpu s", "us/node", "peak MB", "exponent");
  bool all_met = true;
  for (const std::string kind : {"chain", "diamond"}) {
    double last_seconds = 0;
    int64_t last_nodes = 0;
    for (int64_t n : sizes) {
      const std::string path = (dir / (kind + "_" + std::to_string(n) + ".txt")).string();
      std::ofstream(path) << generated_graph(kind, n);
      std::vector<double> seconds, cpu, peaks;
      for (int r = 0; r < reps; ++r) {
        ChildRun run = run_stages_child(self, path);
        seconds.push_back(run.seconds);
        cpu.push_back(run.cpu_seconds);
        peaks.push_back(run.peak_bytes);
      }
      const double t = median(seconds), cpu_t = median(cpu), peak = median(peaks);
      // The growth exponent against the size before: 1 is linear.
      const double exponent = last_nodes ? std::log(t / last_seconds) / std::log(double(n) / double(last_nodes)) : NAN;
      const bool largest = n == sizes.back();
      const bool met_exponent = !largest || !last_nodes || exponent < kExponentTarget;
      const bool met_time = !largest || t < kLargestSecondsTarget;
      const bool met_memory = !largest || peak < kLargestMemoryTarget;
      all_met &= met_exponent && met_time && met_memory;
      if (json) {
        nlohmann::json row = {{"graph", kind}, {"nodes", n}, {"seconds", t}, {"cpu_seconds", cpu_t}, {"peak_bytes", peak},
                              {"us_per_node", t * 1e6 / double(n)}};
        if (last_nodes) row["growth_exponent"] = exponent;
        if (largest)
          row.update({{"target_seconds", kLargestSecondsTarget}, {"target_peak_bytes", kLargestMemoryTarget},
                      {"target_exponent", kExponentTarget}, {"meets_targets", met_exponent && met_time && met_memory}});
        doc["rows"].push_back(row);
      } else {
        std::string exp = last_nodes ? std::to_string(exponent).substr(0, 4) : "-";
        std::printf("%-8s %8lld %10.2f %10.2f %10.1f %10.0f %9s%s\n", kind.c_str(), (long long)n, t, cpu_t,
                    t * 1e6 / double(n), peak / 1e6, exp.c_str(),
                    !largest ? ""
                    : met_exponent && met_time && met_memory
                        ? "  (meets: exponent < 1.2, < 10 s, < 2 GB)"
                        : "  (over target: exponent < 1.2, < 10 s, < 2 GB)");
      }
      last_seconds = t;
      last_nodes = n;
    }
  }
  if (json) {
    doc["meets_targets"] = all_met;
    std::cout << kiln::json_text(doc, 1) << "\n";
  }
  return kExitOk;
}

}  // namespace kiln::cli
