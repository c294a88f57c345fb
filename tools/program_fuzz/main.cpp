// kiln-program-fuzz: the program-level differential fuzzer. Each seed gives a
// random training program (program_gen.h); it runs under plain eager
// (torch.compile disabled) and under every backend, and everything the program
// prints (losses, parameters, gradients, buffers, optimizer state) must agree.
//
//   kiln-program-fuzz --seeds 1-500 [--backend NAME ...] [--steps N] [-j N]
//
// A mismatch is printed as a reduced program; the last line is
// `N programs, M mismatches`, and the exit code is 1 when M > 0.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "compare.h"
#include "program_gen.h"
#include "reduce.h"
#include "runner.h"

namespace {

using namespace kiln::fuzz;

struct Options {
  std::string seeds;
  uint64_t first = 0, last = 0;
  std::vector<std::string> backends;
  int steps = 3;
  int jobs = 2;
  int timeout_s = 120;
  int reduce = 5;         // mismatches reduced (the others printed whole)
  int reduce_tests = 200; // candidate programs per reduction
  std::string keep_dir;
  int64_t emit = -1;
};

struct Mismatch {
  uint64_t seed;
  std::string backend;
  std::string kind;    // wrong-output, error, crash, timeout, reference-error
  std::string detail;
};

bool parse_seeds(Options& o) {
  size_t dash = o.seeds.find('-');
  try {
    o.first = std::stoull(o.seeds.substr(0, dash));
    o.last = dash == std::string::npos ? o.first : std::stoull(o.seeds.substr(dash + 1));
  } catch (const std::exception&) {
    return false;
  }
  return o.first <= o.last;
}

void print_block(const char* title, const std::string& text) {
  std::printf("--- %s ---\n%s%s", title, text.c_str(), text.empty() || text.back() == '\n' ? "" : "\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Program-level differential fuzzer: random training programs, plain eager against every backend"};
  app.add_option("--seeds", o.seeds, "seed range A-B (one program per seed)");
  app.add_option("--backend", o.backends, "backends to compare with plain eager (repeatable; default: eager aot_eager "
                                          "decomp_eager kiln, and kiln-cuda where a GPU is usable)")
      ->check(CLI::IsMember({"eager", "aot_eager", "decomp_eager", "kiln", "kiln-cuda"}));
  app.add_option("--steps", o.steps, "training steps per program")->check(CLI::Range(1, 50));
  app.add_option("-j,--jobs", o.jobs, "programs run at once")->check(CLI::Range(1, 256));
  app.add_option("--timeout", o.timeout_s, "seconds one run may take")->check(CLI::Range(1, 3600));
  app.add_option("--reduce", o.reduce, "mismatches reduced to a small program (the rest printed whole)");
  app.add_option("--reduce-tests", o.reduce_tests, "candidate programs one reduction may try");
  app.add_option("--keep", o.keep_dir, "write each mismatching program (whole and reduced) into this folder");
  app.add_option("--emit", o.emit, "print the program of this seed and exit");
  CLI11_PARSE(app, argc, argv);
  GenOptions gen;
  gen.steps = o.steps;
  if (o.emit >= 0) {
    std::fputs(generate_program(uint64_t(o.emit), gen).render().c_str(), stdout);
    return 0;
  }
  if (o.seeds.empty() || !parse_seeds(o)) {
    std::fprintf(stderr, "kiln-program-fuzz: --seeds A-B is required (A <= B), got '%s'\n", o.seeds.c_str());
    return 2;
  }
  // Compiled code is what is tested: a cache hit would skip compiling it.
  setenv("KILN_COMPILE_CACHE", "0", 0);
  if (o.backends.empty()) {
    o.backends = {"eager", "aot_eager", "decomp_eager", "kiln"};
    if (cuda_usable()) o.backends.push_back("kiln-cuda");
    else std::printf("kiln-cuda skipped: no usable CUDA driver and GPU\n");
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string backend_list;
  for (const std::string& b : o.backends) backend_list += " " + b;
  std::printf("seeds %llu-%llu, %d steps, backends:%s, %d jobs\n", (unsigned long long)o.first,
              (unsigned long long)o.last, o.steps, backend_list.c_str(), o.jobs);

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Mismatch> mismatches;
  std::map<std::string, double> seconds;  // per backend, summed
  uint64_t programs = 0;
  const size_t runs_per_program = o.backends.size() + 1;
  const uint64_t batch = uint64_t(std::max(1, o.jobs)) * 4;
  for (uint64_t start = o.first; start <= o.last; start += batch) {
    const uint64_t end = std::min(o.last, start + batch - 1);
    std::vector<RunRequest> requests;
    for (uint64_t s = start; s <= end; ++s) {
      std::string source = generate_program(s, gen).render();
      requests.push_back({source, "none", o.timeout_s});
      for (const std::string& b : o.backends) requests.push_back({source, b, o.timeout_s});
    }
    std::vector<RunResult> results = run_all(requests, o.jobs);
    for (uint64_t s = start; s <= end; ++s) {
      const size_t base = size_t(s - start) * runs_per_program;
      const RunResult& ref = results[base];
      seconds["none"] += ref.seconds;
      ++programs;
      if (ref.status() != "ok") {
        mismatches.push_back({s, "none", "reference-error", ref.status() + ": " + ref.err.substr(0, 400)});
        std::printf("MISMATCH seed %llu: plain eager failed (%s)\n", (unsigned long long)s, ref.status().c_str());
        continue;
      }
      for (size_t k = 0; k < o.backends.size(); ++k) {
        const RunResult& got = results[base + 1 + k];
        seconds[o.backends[k]] += got.seconds;
        auto [kind, detail] = classify_run(ref, got);
        if (kind.empty()) continue;
        mismatches.push_back({s, o.backends[k], kind, detail});
        std::printf("MISMATCH seed %llu backend %s: %s: %s\n", (unsigned long long)s, o.backends[k].c_str(), kind.c_str(),
                    detail.c_str());
      }
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("... %llu programs, %zu mismatches, %.0f s\n", (unsigned long long)programs, mismatches.size(), elapsed);
  }

  // Each mismatch as a program: reduced for the first few, whole for the rest.
  int reduced = 0;
  for (const Mismatch& m : mismatches) {
    ProgramText program = generate_program(m.seed, gen);
    std::string whole = program.render();
    std::printf("\n=== seed %llu, backend %s: %s\n%s\n", (unsigned long long)m.seed, m.backend.c_str(), m.kind.c_str(),
                m.detail.c_str());
    std::string shown = whole;
    if (m.kind != "reference-error" && reduced < o.reduce) {
      ++reduced;
      auto still_fails = [&](const std::string& source) {
        std::vector<RunResult> r = run_all({{source, "none", o.timeout_s}, {source, m.backend, o.timeout_s}}, 2);
        return r[0].status() == "ok" && classify_run(r[0], r[1]).first == m.kind;
      };
      Reduced r = reduce_program(program, still_fails, o.reduce_tests);
      shown = r.program;
      std::printf("reduced from %zu to %zu removable lines in %d tries%s\n", r.lines_before, r.lines_after, r.tests,
                  r.budget_hit ? " (stopped at --reduce-tests)" : "");
    }
    std::vector<RunResult> r = run_all({{shown, "none", o.timeout_s}, {shown, m.backend, o.timeout_s}}, 2);
    print_block("program", shown);
    print_block("plain eager printed", r[0].out + (r[0].status() == "ok" ? "" : r[0].err));
    print_block((m.backend + " printed").c_str(), r[1].out + (r[1].status() == "ok" ? "" : r[1].err));
    std::printf("reproduce: kiln-program-fuzz --emit %llu --steps %d > p.py; kiln-cli run p.py --backend %s\n",
                (unsigned long long)m.seed, o.steps, m.backend.c_str());
    if (!o.keep_dir.empty()) {
      std::filesystem::create_directories(o.keep_dir);
      const std::string stem = o.keep_dir + "/seed" + std::to_string(m.seed) + "_" + m.backend;
      std::ofstream(stem + ".py") << whole;
      std::ofstream(stem + ".reduced.py") << shown;
    }
  }
  std::printf("\nseconds per backend (summed over runs):");
  for (const auto& [b, s] : seconds) std::printf(" %s %.1f", b.c_str(), s);
  std::printf("\n%llu programs, %zu mismatches\n", (unsigned long long)programs, mismatches.size());
  return mismatches.empty() ? 0 : 1;
}
