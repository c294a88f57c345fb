// kiln [PATH...] [--select COMPILE_ID] [--stage NAME] [--compare STAGE_A STAGE_B] [--screenshot FILE.png] [--quit]
// kiln --bench-view [--bench-nodes N]: the graph view's frame times (docs/workbench.md).
// With no PATH, the bundled example program (a graph break and a recompile).
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QTimer>

#include <cstdio>
#include <functional>

#include "app/version.h"
#include "core/util/limits.h"
#include "viewer/graph_view_bench.h"
#include "viewer/minifier_panel.h"
#include "viewer/workbench.h"

namespace {

// The example ships in the source tree: beside the build folder, else where CMake saw it.
QString bundled_example() {
  const QString rel = "resources/examples/workbench_demo.py";
  QString near_binary = QCoreApplication::applicationDirPath() + "/../../" + rel;
  if (QFileInfo::exists(near_binary)) return QFileInfo(near_binary).absoluteFilePath();
  QString source = KILN_DEFAULT_REFERENCE_DIR;  // <source>/../shared/reference
  source.chop(QString("/../shared/reference").size());
  return source + "/" + rel;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("kiln");
  QApplication::setApplicationName("kiln");
  QApplication::setApplicationVersion(kiln::version_string());
  QCommandLineParser parser;
  parser.setApplicationDescription(
      "Kiln: a workbench for debugging tensor-graph compilers. Opens Kiln programs (.py), TORCH_TRACE logs (file or "
      "folder), TORCH_COMPILE_DEBUG folders, PyTorch repro.py / minifier_launcher.py files and op corpus folders.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("path", "what to open; default: the bundled example program", "[PATH...]");
  QCommandLineOption select("select", "show this compile id (\"0/0\", \"1/0\", a label \"0/0#2\")", "compile_id");
  QCommandLineOption stage("stage", "show this stage of it (\"aot_forward_graph\", \"forward cse #6\", or a pass name)", "name");
  QCommandLineOption screenshot("screenshot", "save a picture of the window once loading and layout are done", "file.png");
  QCommandLineOption quit("quit", "exit when done (with --screenshot: after saving it)");
  QCommandLineOption panel("panel", "raise a panel: source, code, node, guards, numerics, minifier, ranks, timeline, corpus, log", "name");
  QCommandLineOption diff("diff", "show the structural diff of the stage against the one before it");
  QCommandLineOption changed("changed-only", "step only through stages that changed the graph");
  QCommandLineOption node("node", "select this node of the shown graph", "name");
  QCommandLineOption numerics("numerics", "measure the shown stage's numerics");
  QCommandLineOption minify("minify", "minify the shown stage graph with this check (accuracy, compile-error, crash)", "check");
  QCommandLineOption time_limit("time-limit", "seconds a program may run before TimeoutError (default: no limit)", "seconds");
  QCommandLineOption memory_limit("memory-limit", "bytes of tensors a program may hold (K/M/G suffixes; default: KILN_MEMORY_LIMIT, else 3/4 of the machine's memory)", "bytes");
  QCommandLineOption allow_read("allow-read", "a folder programs may read files from (repeatable; default: none)", "dir");
  QCommandLineOption partitioner("partitioner", "how programs' joint graphs split: default or min-cut (as kiln-cli stages)", "name", "default");
  QCommandLineOption bench_view("bench-view", "measure the graph view's frame times on a generated graph offscreen, print them and exit");
  QCommandLineOption bench_nodes("bench-nodes", "nodes of the --bench-view graph (default 10000)", "count", "10000");
  QCommandLineOption allow_write("allow-write", "a folder programs may write (and read) files in (repeatable; default: none)", "dir");
  // Two values, which QCommandLineParser's options cannot take: read here, the option kept for --help.
  QCommandLineOption compare("compare",
                             "compare two stages side by side (Compare tab), each [#N:][COMPILE:]STAGE, #N the Nth PATH: "
                             "--compare aot_forward_graph 'forward cse #6', --compare '#1:0/0:aot_forward_graph' "
                             "'#2:0/0:aot_forward_graph'",
                             "A B");
  for (const QCommandLineOption& o : {select, stage, screenshot, quit, panel, diff, changed, node, numerics, minify, time_limit,
                                      memory_limit, allow_read, allow_write, partitioner, compare, bench_view, bench_nodes})
    parser.addOption(o);
  QStringList args = app.arguments();
  QStringList compare_stages;
  for (qsizetype i = 1; i < args.size(); ++i)
    if (args[i] == "--compare" || args[i] == "-compare") {
      if (i + 2 >= args.size()) {
        std::fprintf(stderr, "kiln: --compare takes two stages\n");
        return 2;
      }
      compare_stages = {args[i + 1], args[i + 2]};
      args.remove(i, 3);
      break;
    }
  parser.process(args);
  if (parser.isSet(bench_view)) {
    bool ok = false;
    const int nodes = parser.value(bench_nodes).toInt(&ok);
    if (!ok || nodes < 10) {
      std::fprintf(stderr, "kiln: --bench-nodes: '%s' is not a count of at least 10\n", qPrintable(parser.value(bench_nodes)));
      return 2;
    }
    std::printf("%s\n", qPrintable(kiln::run_view_bench(nodes, 1600, 1000)));
    return 0;
  }
  double time_limit_s = 0;
  if (parser.isSet(time_limit)) {
    bool ok = false;
    time_limit_s = parser.value(time_limit).toDouble(&ok);
    if (!ok || time_limit_s <= 0) {
      std::fprintf(stderr, "kiln: --time-limit: '%s' is not a positive number of seconds\n", qPrintable(parser.value(time_limit)));
      return 2;
    }
  }
  if (parser.isSet(memory_limit)) {
    auto bytes = kiln::parse_byte_size(parser.value(memory_limit).toStdString());
    if (!bytes) {
      std::fprintf(stderr, "kiln: --memory-limit: %s\n", bytes.status().message().c_str());
      return 2;
    }
    kiln::set_memory_budget(*bytes);  // tensors; the GUI's own heap is not capped
  }
  std::vector<std::string> readable, writable;
  for (const QString& d : parser.values(allow_read)) readable.push_back(d.toStdString());
  for (const QString& d : parser.values(allow_write)) writable.push_back(d.toStdString());
  for (const auto* dirs : {&readable, &writable})
    for (const std::string& d : *dirs)
      if (!QFileInfo(QString::fromStdString(d)).isDir()) {
        std::fprintf(stderr, "kiln: %s: no such folder\n", d.c_str());
        return 2;
      }

  const QString split = parser.value(partitioner);
  if (split != "default" && split != "min-cut") {
    std::fprintf(stderr, "kiln: --partitioner: '%s' is neither default nor min-cut\n", qPrintable(split));
    return 2;
  }

  QStringList paths = parser.positionalArguments();
  if (paths.isEmpty()) paths << bundled_example();

  kiln::viewer::Workbench window;
  window.setDiffMode(parser.isSet(diff));
  window.setChangedOnly(parser.isSet(changed));
  window.setProgramLimits(time_limit_s, readable, writable);
  window.setPartitioner(split);
  window.setPendingSelection(parser.value(select), parser.value(stage));
  window.show();
  int exit_code = 0;
  // KILN_SETTLE_MS bounds how long a scripted run waits for loading and layout.
  int settle_ms = qEnvironmentVariableIsSet("KILN_SETTLE_MS") ? qEnvironmentVariableIntValue("KILN_SETTLE_MS") : 120000;
  QObject::connect(&window, &kiln::viewer::Workbench::openFailed, &app, [&](const QString& path, const QString& error) {
    std::fprintf(stderr, "kiln: %s: %s\n", qPrintable(path), qPrintable(error));
    exit_code = 3;
  });

  // Scripted steps, each once the window has settled: the node, numerics, the panel, then the picture.
  auto finish = [&](bool timed_out) {
    if (timed_out)
      std::fprintf(stderr, "kiln: still busy (%s) after the time limit; taking the picture as it is\n", qPrintable(window.busyReason()));
    if (parser.isSet(panel) && !window.showPanel(parser.value(panel)))
      std::fprintf(stderr, "kiln: no panel named %s\n", qPrintable(parser.value(panel)));
    QTimer::singleShot(200, &window, [&] {
      if (parser.isSet(screenshot)) {
        QString file = parser.value(screenshot);
        if (!window.grab().save(file)) {
          std::fprintf(stderr, "kiln: cannot write screenshot %s\n", qPrintable(file));
          exit_code = 3;
        }
      }
      if (parser.isSet(quit)) QApplication::exit(exit_code);
    });
  };
  auto after_numerics = [&](bool) {
    if (parser.isSet(minify)) {
      window.minifierPanel()->setCheck(parser.value(minify));
      window.minifierPanel()->start();
      window.showPanel("minifier");
      window.whenSettled(finish, settle_ms);
    } else {
      finish(false);
    }
  };
  auto after_node = [&](bool) {
    if (parser.isSet(numerics)) {
      window.measureNumerics();
      window.whenSettled(after_numerics, settle_ms);
    } else {
      after_numerics(false);
    }
  };
  window.whenSettled([&](bool timed_out) {
    if (parser.isSet(node) && !window.selectNodeByName(parser.value(node)))
      std::fprintf(stderr, "kiln: no node %s in the shown graph\n", qPrintable(parser.value(node)));
    if (!compare_stages.isEmpty() && !window.compare(compare_stages[0], compare_stages[1])) {
      std::fprintf(stderr, "kiln: %s\n", qPrintable(window.lastError()));
      exit_code = 2;
    }
    if (timed_out) {
      finish(true);
      return;
    }
    window.whenSettled(after_node, settle_ms);
  }, settle_ms);
  window.open(paths);
  int code = QApplication::exec();
  return code ? code : exit_code;
}
