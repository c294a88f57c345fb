#include "minifier/journal.h"

#include <sqlite3.h>

#include <cstring>
#include <span>

#include "core/graph/printer.h"
#include "core/io/safetensors.h"

namespace kiln::minify {

namespace {

// A prepared statement that finalizes itself.
struct Stmt {
  sqlite3_stmt* s = nullptr;
  Stmt(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &s, nullptr); }
  ~Stmt() { sqlite3_finalize(s); }
  void text(int i, const std::string& v) { sqlite3_bind_text(s, i, v.data(), int(v.size()), SQLITE_TRANSIENT); }
  void blob(int i, const std::vector<std::byte>& v) { sqlite3_bind_blob(s, i, v.data(), int(v.size()), SQLITE_TRANSIENT); }
  void integer(int i, int64_t v) { sqlite3_bind_int64(s, i, v); }
  void real(int i, double v) { sqlite3_bind_double(s, i, v); }
  std::string column_text(int i) {
    const unsigned char* p = sqlite3_column_text(s, i);
    return p ? std::string(reinterpret_cast<const char*>(p), size_t(sqlite3_column_bytes(s, i))) : std::string();
  }
};

Status db_error(sqlite3* db, const std::string& what) {
  return Status::error("minify journal: " + what + ": " + sqlite3_errmsg(db));
}

}  // namespace

Expected<std::unique_ptr<Journal>> Journal::open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status::error("cannot open the minify journal " + path + ": " + msg);
  }
  std::unique_ptr<Journal> j(new Journal(db));
  sqlite3_busy_timeout(db, 5000);
  // WAL with synchronous=NORMAL: a commit is in the log before the call
  // returns, which a killed process cannot undo (only a power cut could).
  const char* schema =
      "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
      "CREATE TABLE IF NOT EXISTS runs(id INTEGER PRIMARY KEY, input TEXT, predicate TEXT, kind TEXT,"
      " signature TEXT, detail TEXT, initial_nodes INTEGER, completed INTEGER DEFAULT 0);"
      "CREATE TABLE IF NOT EXISTS steps(run INTEGER, step INTEGER, strategy TEXT, description TEXT,"
      " nodes_before INTEGER, nodes_after INTEGER, at_s REAL, graph TEXT, inputs BLOB, PRIMARY KEY(run, step));";
  if (Status s = j->exec(schema); !s) return Status::error(s.message() + " (" + path + ")");
  return j;
}

Journal::~Journal() { sqlite3_close(db_); }

Status Journal::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "error";
    sqlite3_free(err);
    return Status::error("minify journal: " + msg);
  }
  return {};
}

Status Journal::put_candidate(int step, const Step& st, const Candidate& c) {
  NamedTensors named;
  for (size_t i = 0; i < c.inputs.size(); ++i) named.emplace_back("input" + std::to_string(i), c.inputs[i]);
  Expected<std::vector<std::byte>> bytes = serialize_safetensors(named);
  if (!bytes) return bytes.status();
  Stmt s(db_,
         "INSERT OR REPLACE INTO steps(run, step, strategy, description, nodes_before, nodes_after, at_s, graph, inputs)"
         " VALUES(?,?,?,?,?,?,?,?,?)");
  s.integer(1, run_);
  s.integer(2, step);
  s.text(3, st.strategy);
  s.text(4, st.description);
  s.integer(5, int64_t(st.nodes_before));
  s.integer(6, int64_t(st.nodes_after));
  s.real(7, st.at_s);
  s.text(8, print_graph_module(c.graph));
  s.blob(9, *bytes);
  if (sqlite3_step(s.s) != SQLITE_DONE) return db_error(db_, "writing step " + std::to_string(step));
  return {};
}

Status Journal::begin_run(const std::string& input, const std::string& predicate_json, const Candidate& original,
                          const Verdict& verdict) {
  if (Status s = exec("BEGIN IMMEDIATE"); !s) return s;
  Stmt s(db_, "INSERT INTO runs(input, predicate, kind, signature, detail, initial_nodes) VALUES(?,?,?,?,?,?)");
  s.text(1, input);
  s.text(2, predicate_json);
  s.text(3, verdict.kind);
  s.text(4, verdict.signature);
  s.text(5, verdict.detail);
  s.integer(6, int64_t(op_count(original.graph)));
  if (sqlite3_step(s.s) != SQLITE_DONE) {
    exec("ROLLBACK");
    return db_error(db_, "starting a run");
  }
  run_ = sqlite3_last_insert_rowid(db_);
  Step zero;
  zero.strategy = "input";
  zero.nodes_before = zero.nodes_after = op_count(original.graph);
  if (Status st = put_candidate(0, zero, original); !st) {
    exec("ROLLBACK");
    return st;
  }
  return exec("COMMIT");
}

Status Journal::add_step(const Step& step, const Candidate& c) { return put_candidate(step.index, step, c); }

Status Journal::finish_run(bool completed) {
  Stmt s(db_, "UPDATE runs SET completed=? WHERE id=?");
  s.integer(1, completed);
  s.integer(2, run_);
  if (sqlite3_step(s.s) != SQLITE_DONE) return db_error(db_, "finishing the run");
  return {};
}

Expected<std::optional<Journal::Resumed>> Journal::latest_run() {
  Resumed r;
  {
    Stmt s(db_, "SELECT id, input, predicate, kind, signature, detail, initial_nodes, completed FROM runs ORDER BY id DESC LIMIT 1");
    int rc = sqlite3_step(s.s);
    if (rc == SQLITE_DONE) return std::optional<Resumed>();
    if (rc != SQLITE_ROW) return db_error(db_, "reading runs");
    r.run = sqlite3_column_int64(s.s, 0);
    r.input = s.column_text(1);
    r.predicate_json = s.column_text(2);
    r.original.outcome = Verdict::Outcome::Fail;
    r.original.kind = s.column_text(3);
    r.original.signature = s.column_text(4);
    r.original.detail = s.column_text(5);
    r.initial_nodes = size_t(sqlite3_column_int64(s.s, 6));
    r.completed = sqlite3_column_int64(s.s, 7) != 0;
  }
  Stmt s(db_,
         "SELECT step, strategy, description, nodes_before, nodes_after, at_s, graph, inputs FROM steps WHERE run=? ORDER BY step");
  s.integer(1, r.run);
  std::string graph;
  std::vector<std::byte> inputs;
  int rc;
  while ((rc = sqlite3_step(s.s)) == SQLITE_ROW) {
    Step st;
    st.index = sqlite3_column_int(s.s, 0);
    st.strategy = s.column_text(1);
    st.description = s.column_text(2);
    st.nodes_before = size_t(sqlite3_column_int64(s.s, 3));
    st.nodes_after = size_t(sqlite3_column_int64(s.s, 4));
    st.at_s = sqlite3_column_double(s.s, 5);
    graph = s.column_text(6);
    const std::byte* p = static_cast<const std::byte*>(sqlite3_column_blob(s.s, 7));
    inputs.assign(p, p + sqlite3_column_bytes(s.s, 7));
    if (st.index > 0) r.steps.push_back(st);
  }
  if (rc != SQLITE_DONE) return db_error(db_, "reading steps");
  if (graph.empty()) return Status::error("minify journal: run " + std::to_string(r.run) + " has no steps");
  Expected<SafetensorsFile> tensors = parse_safetensors(std::span<const std::byte>(inputs), "minify journal inputs");
  if (!tensors) return tensors.status();
  std::vector<Tensor> in(tensors->tensors.size());
  for (auto& [name, t] : tensors->tensors) {
    size_t i = size_t(std::atoi(name.c_str() + 5));
    if (name.rfind("input", 0) != 0 || i >= in.size()) return Status::error("minify journal: bad input name " + name);
    in[i] = t;
  }
  Expected<Candidate> last = candidate_from_text(graph, std::move(in), "minify journal step");
  if (!last) return last.status();
  r.last = std::move(*last);
  return std::optional<Resumed>(std::move(r));
}

}  // namespace kiln::minify
