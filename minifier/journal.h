#pragma once
// The minifier's journal: one SQLite database (OUT/minify.db, WAL) with a row
// per run and a row per accepted step holding the candidate itself (graph in
// print_readable text, inputs as safetensors bytes). Each step is committed
// before the minifier goes on, so a run killed at any point (SIGKILL
// included) resumes from its last accepted step and loses none.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "minifier/candidate.h"
#include "minifier/predicate.h"

struct sqlite3;

namespace kiln::minify {

struct Step {
  int index = 0;  // 1, 2, ... within the run (continued across resumes)
  std::string strategy;
  std::string description;
  size_t nodes_before = 0, nodes_after = 0;  // call nodes
  double at_s = 0;                           // seconds since the run (or resume) started
};

class Journal {
 public:
  static Expected<std::unique_ptr<Journal>> open(const std::string& path);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // A new run from `original` (step 0), failing as `verdict`.
  Status begin_run(const std::string& input, const std::string& predicate_json, const Candidate& original,
                   const Verdict& verdict);
  Status add_step(const Step& step, const Candidate& c);
  Status finish_run(bool completed);

  struct Resumed {
    int64_t run = 0;
    std::string input, predicate_json;
    Verdict original;
    size_t initial_nodes = 0;
    std::vector<Step> steps;  // step 0 (the input) left out
    Candidate last;           // the latest accepted candidate (the input when no step)
    bool completed = false;
  };
  // The latest run, with every step; nullopt when the journal has none.
  Expected<std::optional<Resumed>> latest_run();
  // Continue `run` (resumed): later steps go to it.
  void continue_run(int64_t run) { run_ = run; }

 private:
  explicit Journal(sqlite3* db) : db_(db) {}
  Status exec(const char* sql);
  Status put_candidate(int step, const Step& s, const Candidate& c);

  sqlite3* db_ = nullptr;
  int64_t run_ = 0;
};

}  // namespace kiln::minify
