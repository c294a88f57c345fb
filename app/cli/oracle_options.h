#pragma once
// The oracle's command-line options, one set for `kiln-cli minify` and
// `kiln-cli repro run` (docs/cli.md): how real PyTorch judges a candidate.
#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace kiln::minify {
struct PredicateOptions;
}

namespace kiln::cli {

struct OracleOptions {
  std::string command;       // --oracle CMD, with {repro}
  std::string python;        // --oracle-python: persistent workers
  std::string worker;        // --oracle-worker SCRIPT
  std::string match;         // --oracle-match REGEX
  std::string torch_device;  // --torch-device
  std::string torch_check;   // --torch-check
  int64_t memory_mb = 0;     // --oracle-memory-mb
  bool allow_eager_failure = false;

  bool chooses_oracle() const { return !command.empty() || !python.empty(); }
};

void add_oracle_options(CLI::App* sub, OracleOptions& o);

// Puts the options given onto `p` (the others keep p's values: a Kiln
// repro's recorded predicate, or the defaults). Returns a usage error, or "".
std::string apply_oracle_options(const OracleOptions& o, minify::PredicateOptions& p);

}  // namespace kiln::cli
