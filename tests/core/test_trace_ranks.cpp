// rank_report (core/trace/ranks.h) and `kiln-cli trace ranks`: ranks grouped
// by what they compiled, cached and scheduled; the first compile where a rank
// leaves the majority; collectives parity between the scheduler and the
// generated code; graph execution order; missing and damaged rank files.
// The logs are our own, written the way PyTorch writes per-rank logs.
#include "test_support.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <fstream>

#include "core/trace/ranks.h"
#include "core/trace/reader.h"
#include "trace_log_util.h"

using namespace kiln;
using namespace kiln::trace;

namespace {

using test::RankLog;
using test::rank_log;

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

const RankGroup& group_with(const RankAspect& a, size_t member) {
  for (const RankGroup& g : a.groups)
    if (std::find(g.members.begin(), g.members.end(), member) != g.members.end()) return g;
  qFatal("rank index %zu in no group of %s", member, a.name.c_str());
}

const RankAspect& aspect(const RankReport& r, const std::string& name) {
  for (const RankAspect& a : r.aspects)
    if (a.name == name) return a;
  qFatal("no aspect %s", name.c_str());
}

}  // namespace

class TestTraceRanks : public QObject {
  Q_OBJECT
 private slots:
  void identical_ranks_agree_whatever_their_device() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    for (int rank = 0; rank < 3; ++rank) {
      RankLog log;
      log.device = rank;  // cuda:0, cuda:1, cuda:2: the same graph
      write(dir + "/dedicated_log_torch_trace_rank_" + std::to_string(rank) + "_x" + std::to_string(rank) + ".log", rank_log(log));
    }
    auto t = open_trace(dir);
    QVERIFY2(t.ok(), t.status().to_string().c_str());
    RankReport r = rank_report(*t);
    QCOMPARE(r.ranks.size(), size_t(3));
    QVERIFY(r.missing_ranks.empty());
    for (const RankAspect& a : r.aspects) QVERIFY2(!a.diverges(), a.name.c_str());
    QVERIFY(r.divergences.empty());
    QCOMPARE(r.parity_checked, 3);
    QVERIFY(r.parity.empty());
    QVERIFY(!r.diverges());
    QVERIFY(rank_report_text(r).find("the ranks agree on everything compared") != std::string::npos);
  }

  void the_odd_rank_out_and_where_it_leaves() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    RankLog same;
    same.cache = {"hit", "hit"};
    RankLog odd = same;
    odd.cache = {"hit", "miss", "miss"};  // a cache miss on its second compile, then one more recompile
    odd.schedule = "[\"torch.ops._c10d_functional.all_gather_into_tensor.default\"]";
    write(dir + "/dedicated_log_torch_trace_rank_0.log", rank_log(same));
    write(dir + "/dedicated_log_torch_trace_rank_1.log", rank_log(odd));
    write(dir + "/dedicated_log_torch_trace_rank_2.log", rank_log(same));
    write(dir + "/dedicated_log_torch_trace_rank_4.log", rank_log(same));  // rank 3 wrote nothing
    auto t = open_trace(dir);
    QVERIFY2(t.ok(), t.status().to_string().c_str());
    RankReport r = rank_report(*t);
    QCOMPARE(r.ranks.size(), size_t(4));
    QCOMPARE(r.missing_ranks, std::vector<int64_t>({3}));
    QCOMPARE(*r.ranks[1].rank, int64_t(1));
    for (const char* name : {"compile ids", "recompiles", "cache", "collective schedules"}) {
      const RankAspect& a = aspect(r, name);
      QVERIFY2(a.diverges(), name);
      QCOMPARE(a.groups.size(), size_t(2));
      QCOMPARE(a.groups[0].members, std::vector<size_t>({0, 2, 3}));  // the majority first
      QCOMPARE(group_with(a, 1).members, std::vector<size_t>({1}));
    }
    QCOMPARE(aspect(r, "graphs").groups.size(), size_t(2));  // one more graph on rank 1
    QCOMPARE(aspect(r, "recompiles").groups[1].summary, std::string("2 recompiles"));
    QCOMPARE(r.divergences.size(), size_t(1));
    const RankDivergence& d = r.divergences[0];
    QCOMPARE(d.rank, size_t(1));
    QCOMPARE(d.reference, size_t(0));
    QVERIFY(r.reference_is_majority);
    QCOMPARE(d.index, size_t(0));  // its schedule differs from the first compile on
    QCOMPARE(d.what, std::string("collectives"));
    QCOMPARE(d.compile, std::string("0/0"));
    const std::string text = rank_report_text(r);
    QVERIFY2(text.find("missing ranks (no log file): 3") != std::string::npos, text.c_str());
    QVERIFY2(text.find("first divergence: rank 1 leaves rank 0 (the majority) at compile #1") != std::string::npos, text.c_str());
    QVERIFY2(text.find("  ranks 0-2, 4: ") == std::string::npos && text.find("  ranks 0, 2, 4: ") != std::string::npos, text.c_str());
    QVERIFY(r.diverges());
  }

  void cache_difference_is_named() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    RankLog hit, miss;
    hit.cache = {"hit"};
    miss.cache = {"miss"};
    write(dir + "/dedicated_log_torch_trace_rank_0.log", rank_log(hit));
    write(dir + "/dedicated_log_torch_trace_rank_1.log", rank_log(miss));
    auto t = open_trace(dir);
    QVERIFY(t.ok());
    RankReport r = rank_report(*t);
    QCOMPARE(r.divergences.size(), size_t(1));
    QCOMPARE(r.divergences[0].what, std::string("cache"));
    QVERIFY(!r.reference_is_majority);  // one rank each: the lowest is the reference
    QVERIFY2(r.divergences[0].detail.find("cache fx_graph miss") != std::string::npos, r.divergences[0].detail.c_str());
  }

  void collectives_parity_counts_calls_not_comments() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    RankLog no_wait;
    no_wait.waits = false;
    write(dir + "/dedicated_log_torch_trace_rank_0.log", rank_log(no_wait));
    auto t = open_trace(dir);
    QVERIFY(t.ok());
    RankReport r = rank_report(*t);
    QCOMPARE(r.parity_checked, 1);
    QCOMPARE(r.parity.size(), size_t(1));
    QCOMPARE(r.parity[0].offset, 0);  // one all_reduce planned, one called (the comment's is not a call)
    QCOMPARE(r.parity[0].missing_waits, 1);
    QCOMPARE(r.parity[0].compile, std::string("0/0"));

    std::map<std::string, int> calls = collective_calls(
        "x = torch.ops._c10d_functional.all_gather_into_tensor.default(a, 2, '0')\n"
        "# torch.ops._c10d_functional.all_reduce_.default(a)\n"
        "s = \"# not a comment\"; torch.ops._c10d_functional.reduce_scatter_tensor.default(a, 'sum', 2, '0')\n"
        "    // torch.ops._c10d_functional.broadcast.default(a)\n"
        "y = x // 2; torch.ops._c10d_functional.wait_tensor.default(x)\n"
        "z = other.ops._c10d_functional.all_reduce.default(a)\n");
    QCOMPARE(calls, (std::map<std::string, int>{{"all_gather", 1}, {"reduce_scatter", 1}, {"wait_tensor", 1}}));
    QCOMPARE(collective_kind("torch.ops._c10d_functional.all_reduce_.default"), std::string("all_reduce"));
    QCOMPARE(collective_kind("torch.ops._c10d_functional.wait_tensor.default"), std::string());
    QCOMPARE(collective_kind("torch.ops.c10d.reduce_.default"), std::string("reduce"));
  }

  void execution_order_steps_that_differ() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    RankLog a, b;
    a.cache = b.cache = {"hit", "hit"};
    a.execution = "{\"graph_execution_order\": [{\"compile_id\": \"0/0\"}, {\"compile_id\": \"0/1\"}, {\"compile_id\": \"0/1\"}]}";
    b.execution = "{\"graph_execution_order\": [{\"compile_id\": \"0/1\"}, {\"compile_id\": \"0/0\"}, {\"compile_id\": \"0/1\"}]}";
    write(dir + "/dedicated_log_torch_trace_rank_0.log", rank_log(a));
    write(dir + "/dedicated_log_torch_trace_rank_1.log", rank_log(b));
    auto t = open_trace(dir);
    QVERIFY(t.ok());
    RankReport r = rank_report(*t);
    QVERIFY(r.execution_order_differs);
    QCOMPARE(r.execution.size(), size_t(2));  // the third run is 0/1 on both
    QCOMPARE(r.execution[0].by_rank.at(0), std::string("0/0"));
    QCOMPARE(r.execution[0].by_rank.at(1), std::string("0/1"));
    QCOMPARE(r.ranks[0].execution_order.size(), size_t(3));
    QVERIFY(aspect(r, "execution order").diverges());
    QVERIFY(r.divergences.empty());  // they compiled the same graphs
  }

  // A rank file that is not a log, a schedule that is not JSON, a file that
  // names no rank: listed with diagnostics, never a crash.
  void damaged_rank_files() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    RankLog bad;
    bad.schedule = "[\"torch.ops._c10d_functional.all_reduce_.default\", ";  // cut short
    write(dir + "/dedicated_log_torch_trace_rank_0.log", rank_log(RankLog{}));
    write(dir + "/dedicated_log_torch_trace_rank_1.log", rank_log(bad));
    write(dir + "/dedicated_log_torch_trace_rank_2.log", std::string("\x7f" "ELF\0\0\xff\xfe garbage\n", 18));
    write(dir + "/dedicated_log_torch_trace_rank_3.log", rank_log(RankLog{}).substr(0, 300));  // truncated
    auto t = open_trace(dir);
    QVERIFY2(t.ok(), t.status().to_string().c_str());
    RankReport r = rank_report(*t);
    QCOMPARE(r.ranks.size(), size_t(4));
    QCOMPARE(r.ranks[2].compiles.size(), size_t(0));
    QVERIFY(!r.diagnostics.empty());
    bool named = false;
    for (const Diagnostic& d : r.diagnostics) named |= d.file.find("rank_1.log") != std::string::npos && d.line > 0;
    QVERIFY(named);
    QVERIFY(!t->diagnostics.empty());
    const std::string text = rank_report_text(r);
    QVERIFY(text.find("rank 2: 0 compiles") != std::string::npos);
    nlohmann::json j = rank_report_json(r);
    QCOMPARE(j["ranks"].size(), size_t(4));
  }

  void cli_json_and_exit_codes() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    RankLog miss;
    miss.cache = {"miss"};
    write(dir + "/dedicated_log_torch_trace_rank_0.log", rank_log(RankLog{}));
    write(dir + "/dedicated_log_torch_trace_rank_1.log", rank_log(miss));
    test::CliRun run = test::run_cli({"trace", "ranks", tmp.path(), "--json"}, 120000);
    QCOMPARE(run.code, 0);
    QJsonObject root = QJsonDocument::fromJson(run.out).object();
    for (const char* key : {"ranks", "missing_ranks", "diverges", "aspects", "divergences", "collectives_parity",
                            "execution_order", "runtime_estimates", "diagnostics", "trace_diagnostics"})
      QVERIFY2(root.contains(key), key);
    QCOMPARE(root["diverges"].toBool(), true);
    QCOMPARE(root["ranks"].toArray().size(), 2);
    QCOMPARE(root["ranks"].toArray()[1].toObject()["rank"].toInt(), 1);
    QCOMPARE(root["divergences"].toArray()[0].toObject()["what"].toString(), QString("cache"));
    test::CliRun text = test::run_cli({"trace", "ranks", tmp.path()}, 120000);
    QCOMPARE(text.code, 0);
    QVERIFY(text.out.contains("cache: DIFFER across ranks"));
    test::CliRun missing = test::run_cli({"trace", "ranks", tmp.path() + "/nope"}, 120000);
    QCOMPARE(missing.code, 3);
  }
};

QTEST_GUILESS_MAIN(TestTraceRanks)
#include "test_trace_ranks.moc"
