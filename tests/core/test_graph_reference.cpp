// Every graph in ../shared/reference parses, verifies with zero diagnostics,
// and prints to text that parses back to the same structural hash; dynamo
// graphs agree with compilation_metrics' node, input and op counts.
#include <QDirIterator>
#include <QJsonDocument>
#include <QJsonObject>

#include <map>

#include "core/graph/hash.h"
#include "core/graph/parser.h"
#include "core/graph/printer.h"
#include "core/graph/verify.h"
#include "test_support.h"

using namespace kiln;

namespace {

struct GraphText {
  std::string file;  // display name
  int first_line = 1;
  std::string text;
  std::string tag;  // payload tag ("dynamo_output_graph", "artifact:fx_graph_runnable"), empty for files
  QJsonObject envelope;
  int modules = 1;  // graph modules expected in the text
};

std::string read_file(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(path));
  return f.readAll().toStdString();
}

QStringList files_under(const QString& dir, const QStringList& patterns) {
  QStringList out;
  QDirIterator it(dir, patterns, QDir::Files, QDirIterator::Subdirectories);
  while (it.hasNext()) out << it.next();
  out.sort();
  return out;
}

std::string payload_tag(const QJsonObject& env) {
  for (auto it = env.begin(); it != env.end(); ++it) {
    QString key = it.key();
    if (key == "frame_id" || key == "frame_compile_id" || key == "attempt" || key == "has_payload") continue;
    if (key == "artifact") return "artifact:" + it.value().toObject().value("name").toString().toStdString();
    return key.toStdString();
  }
  return {};
}

// A TORCH_TRACE line is "<glog prefix>] {json}"; with "has_payload" the
// following tab-indented lines are its payload.
std::string compile_key(const std::string& file, const QJsonObject& env) {
  return file + " " + std::to_string(env.value("frame_id").toInt()) + "/" +
         std::to_string(env.value("frame_compile_id").toInt()) + "/" + std::to_string(env.value("attempt").toInt());
}

void collect_trace(const QString& path, std::vector<GraphText>& out, std::map<std::string, QJsonObject>& metrics) {
  std::string content = read_file(path);
  std::vector<std::string_view> lines;
  for (size_t start = 0; start < content.size();) {
    size_t nl = content.find('\n', start);
    if (nl == std::string::npos) nl = content.size();
    lines.emplace_back(content.data() + start, nl - start);
    start = nl + 1;
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    size_t brace = lines[i].find("] {");
    if (brace == std::string_view::npos) continue;
    std::string_view json = lines[i].substr(brace + 2);
    QJsonObject env = QJsonDocument::fromJson(QByteArray(json.data(), qsizetype(json.size()))).object();
    if (env.contains("compilation_metrics")) metrics[compile_key(path.toStdString(), env)] = env;
    if (!env.contains("has_payload")) continue;
    std::string payload;
    size_t j = i + 1;
    for (; j < lines.size() && lines[j].starts_with('\t'); ++j) {
      payload += lines[j].substr(1);
      payload += '\n';
    }
    std::string tag = payload_tag(env);
    bool graph = payload.starts_with("class ") || tag == "artifact:fx_graph_runnable";
    if (graph) out.push_back({path.toStdString(), int(i) + 2, std::move(payload), tag, env, 1});
    i = j - 1;
  }
}

std::string diagnostics_text(const std::vector<Diagnostic>& ds) {
  std::string s;
  for (const auto& d : ds) s += d.to_string() + "\n";
  return s;
}

size_t op_count(const Graph& g) {
  return count_nodes(g, OpKind::CallFunction) + count_nodes(g, OpKind::CallMethod) +
         count_nodes(g, OpKind::CallModule);
}

}  // namespace

class TestGraphReference : public QObject {
  Q_OBJECT
 private:
  std::vector<GraphText> texts_;
  std::map<std::string, QJsonObject> metrics_;  // by compile_key

 private slots:
  void initTestCase() {
    QString ref = QString::fromStdString(kiln::test::reference_dir());
    for (const QString& log : files_under(ref, {"*.log"})) collect_trace(log, texts_, metrics_);
    for (const QString& f : files_under(ref + "/compile_debug", {"fx_graph_*.py"}))
      texts_.push_back({f.toStdString(), 1, read_file(f), {}, {}, 1});
    for (const QString& f : files_under(ref + "/minifier", {"repro.py", "minifier_launcher.py"}))
      texts_.push_back({f.toStdString(), 1, read_file(f), {}, {}, 1});
    // An ExportedProgram printout: the readable graph, and maybe graph_module.code after it.
    for (const QString& f : files_under(ref + "/export", {"*.txt"})) {
      std::string text = read_file(f);
      int forwards = 0;
      for (size_t p = text.find("def forward("); p != std::string::npos; p = text.find("def forward(", p + 1)) ++forwards;
      texts_.push_back({f.toStdString(), 1, std::move(text), {}, {}, forwards});
    }
    qInfo("%zu graph texts found", texts_.size());
    QVERIFY(texts_.size() >= 400);
  }

  void every_graph_parses_verifies_and_round_trips() {
    size_t graphs = 0, nodes = 0;
    for (const GraphText& t : texts_) {
      auto parsed = parse_graph_modules(t.text, t.file, t.first_line);
      QVERIFY2(parsed.ok(), qPrintable(QString::fromStdString(parsed.status().to_string())));
      QCOMPARE(int(parsed->size()), t.modules);
      for (const Graph& g : *parsed) {
        ++graphs;
        nodes += g.size();
        std::string where = t.file + ":" + std::to_string(t.first_line);
        auto diags = verify(g);
        QVERIFY2(diags.empty(), qPrintable(QString::fromStdString(where + "\n" + diagnostics_text(diags))));
        std::string printed = print_graph_module(g);
        auto reparsed = parse_graph_module(printed, "<printed>");
        QVERIFY2(reparsed.ok(), qPrintable(QString::fromStdString(where + ": " + reparsed.status().to_string() +
                                                                   "\n" + printed)));
        QVERIFY2(structural_hash(*reparsed) == structural_hash(g), qPrintable(QString::fromStdString(where)));
        QCOMPARE(print_graph_module(*reparsed), printed);
      }
    }
    qInfo("%zu graphs, %zu nodes parsed, verified and round-tripped", graphs, nodes);
    QVERIFY(graphs >= 400);
  }

  // print_readable payloads print back to the same statements: every line of
  // the original, whitespace aside, is in the printed text.
  void printing_matches_pytorch() {
    size_t compared = 0;
    for (const GraphText& t : texts_) {
      if (!t.text.starts_with("class ")) continue;
      auto g = parse_graph_module(t.text, t.file, t.first_line);
      QVERIFY(g.ok());
      std::string printed = print_graph_module(*g);
      size_t pos = 0;
      for (size_t start = 0; start < t.text.size();) {
        size_t nl = t.text.find('\n', start);
        if (nl == std::string::npos) nl = t.text.size();
        std::string line = t.text.substr(start, nl - start);
        start = nl + 1;
        while (!line.empty() && line.back() == ' ') line.pop_back();
        if (line.empty() || line.starts_with(" # graph id")) continue;
        size_t found = printed.find(line + "\n", pos);
        QVERIFY2(found != std::string::npos,
                 qPrintable(QString::fromStdString(t.file + ":" + std::to_string(t.first_line) +
                                                   ": printed text lacks, in order:\n" + line + "\n--- printed:\n" +
                                                   printed)));
        pos = found + line.size();
      }
      ++compared;
    }
    QVERIFY(compared >= 300);
  }

  // graph_node_count, graph_input_count and graph_op_count (call_function,
  // call_method and call_module nodes) of the compile that printed the graph.
  void dynamo_graphs_match_compilation_metrics() {
    std::map<std::string, std::vector<const GraphText*>> graphs;
    for (const GraphText& t : texts_)
      if (t.tag == "dynamo_output_graph") graphs[compile_key(t.file, t.envelope)].push_back(&t);
    size_t checked = 0;
    for (const auto& [key, env] : metrics_) {
      QJsonObject m = env.value("compilation_metrics").toObject();
      auto it = graphs.find(key);
      if (it == graphs.end() || it->second.size() != 1 || !m.value("graph_op_count").isDouble()) continue;
      const GraphText& t = *it->second[0];
      auto g = parse_graph_module(t.text, t.file, t.first_line);
      QVERIFY(g.ok());
      QCOMPARE(int(g->size()), m.value("graph_node_count").toInt());
      QCOMPARE(int(count_nodes(*g, OpKind::Placeholder)), m.value("graph_input_count").toInt());
      QCOMPARE(int(op_count(*g)), m.value("graph_op_count").toInt());
      ++checked;
    }
    qInfo("%zu dynamo graphs checked against compilation_metrics", checked);
    QVERIFY(checked >= 20);
  }
};

QTEST_GUILESS_MAIN(TestGraphReference)
#include "test_graph_reference.moc"
