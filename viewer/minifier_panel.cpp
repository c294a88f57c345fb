#include "viewer/minifier_panel.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QVBoxLayout>

#include "core/graph/printer.h"

namespace kiln::viewer {

MinifierPanel::MinifierPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QHBoxLayout(this);
  auto* form = new QFormLayout;
  graph_ = new QComboBox(this);
  graph_->setMinimumContentsLength(24);
  graph_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  check_ = new QComboBox(this);
  check_->addItems({"accuracy", "compile-error", "crash", "cpu-gpu-mismatch"});
  tolerance_ = new QDoubleSpinBox(this);
  tolerance_->setDecimals(6);
  tolerance_->setRange(0, 1e6);
  tolerance_->setValue(1e-3);
  jobs_ = new QSpinBox(this);
  jobs_->setRange(1, 64);
  jobs_->setValue(2);
  timeout_ = new QDoubleSpinBox(this);
  timeout_->setRange(1, 3600);
  timeout_->setValue(60);
  timeout_->setSuffix(" s");
  inject_ = new QComboBox(this);
  inject_->addItems({"none", "relu:accuracy", "relu:compile-error", "relu:crash"});
  inject_->setToolTip("KILN_INJECT_BUG: make Kiln miscompile relu on purpose, to try the minifier");
  if (int i = inject_->findText(qEnvironmentVariable("KILN_INJECT_BUG")); i >= 0) inject_->setCurrentIndex(i);
  minify_ = new QPushButton("Minify", this);
  cancel_ = new QPushButton("Cancel", this);
  cancel_->setEnabled(false);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(minify_);
  buttons->addWidget(cancel_);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat("idle");
  state_ = new QLabel(this);
  state_->setWordWrap(true);
  form->addRow("Graph", graph_);
  form->addRow("Predicate", check_);
  form->addRow("Tolerance", tolerance_);
  form->addRow("Parallel jobs", jobs_);
  form->addRow("Timeout per candidate", timeout_);
  form->addRow("Injected bug", inject_);
  form->addRow(buttons);
  layout->addLayout(form, 2);
  // The run's state above its log, where there is room for a long path.
  auto* run = new QVBoxLayout;
  run->addWidget(progress_);
  run->addWidget(state_);
  log_ = new QPlainTextEdit(this);
  log_->setReadOnly(true);
  log_->setPlaceholderText("Each accepted step of the minifier appears here.");
  run->addWidget(log_, 1);
  layout->addLayout(run, 3);
  connect(minify_, &QPushButton::clicked, this, &MinifierPanel::start);
  connect(cancel_, &QPushButton::clicked, this, &MinifierPanel::cancel);
}

MinifierPanel::~MinifierPanel() {
  if (process_ && process_->state() != QProcess::NotRunning) {
    process_->kill();
    process_->waitForFinished(3000);
  }
}

void MinifierPanel::setCompile(std::shared_ptr<const Session> s, int compile, int preferred) {
  if (isRunning()) return;
  session_ = std::move(s);
  compile_ = compile;
  graph_->clear();
  if (!session_ || compile < 0) return;
  const SessionCompile& c = session_->compiles[size_t(compile)];
  for (int i = 0; i < int(c.stages.size()); ++i) {
    const SessionStage& st = c.stages[size_t(i)];
    if (st.kind != StageKind::Graph || !st.changed) continue;
    graph_->addItem(QString::fromStdString(st.name), i);
    if (i == preferred) graph_->setCurrentIndex(graph_->count() - 1);
  }
}

void MinifierPanel::setCheck(const QString& check) { check_->setCurrentText(check); }
void MinifierPanel::setInjectBug(const QString& bug) { inject_->setCurrentText(bug); }
bool MinifierPanel::isRunning() const { return process_ && process_->state() != QProcess::NotRunning; }
QString MinifierPanel::log() const { return log_->toPlainText(); }

QString MinifierPanel::cliPath() const {
  if (!cli_.isEmpty()) return cli_;
  QByteArray env = qgetenv("KILN_CLI");
  if (!env.isEmpty()) return QString::fromLocal8Bit(env);
  return QCoreApplication::applicationDirPath() + "/kiln-cli";
}

void MinifierPanel::start() {
  if (isRunning() || !session_ || compile_ < 0 || graph_->currentIndex() < 0) {
    if (!session_) state_->setText("Open something and pick a graph first.");
    return;
  }
  const SessionCompile& c = session_->compiles[size_t(compile_)];
  const SessionStage& st = c.stages[size_t(graph_->currentData().toInt())];
  out_dir_ = QDir::temp().filePath("kiln-minify-" + QDateTime::currentDateTime().toString("yyyyMMdd-hhmmss-zzz"));
  QDir().mkpath(out_dir_);
  QStringList args{"minify"};
  if (session_->kind == Session::Kind::Trace) {
    args << QString::fromStdString(session_->path) << "--compile-id" << QString::fromStdString(c.id) << "--stage"
         << QString::fromStdString(st.artifact);
  } else {
    // A program's graph goes over as print_readable text, which keeps the inputs' dtypes and sizes.
    QString file = out_dir_ + "/input_graph.txt";
    QFile f(file);
    if (!st.graph || !f.open(QIODevice::WriteOnly)) {
      state_->setText("Cannot write the graph to " + file);
      return;
    }
    f.write(QByteArray::fromStdString(print_graph_module(*st.graph)));
    f.close();
    args << file;
  }
  args << "--check" << check_->currentText() << "--tolerance" << QString::number(tolerance_->value(), 'g', 10) << "-j"
       << QString::number(jobs_->value()) << "--timeout" << QString::number(timeout_->value()) << "--out" << out_dir_;
  delete process_;
  process_ = new QProcess(this);
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("KILN_INJECT_BUG", inject_->currentText() == "none" ? "" : inject_->currentText());
  if (inject_->currentText() == "none") env.remove("KILN_INJECT_BUG");
  process_->setProcessEnvironment(env);
  process_->setProcessChannelMode(QProcess::MergedChannels);
  connect(process_, &QProcess::readyRead, this, &MinifierPanel::onOutput);
  connect(process_, &QProcess::finished, this, &MinifierPanel::onFinished);
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart) onFinished(-1, QProcess::CrashExit);
  });
  log_->clear();
  log_->appendPlainText("$ kiln-cli " + args.join(' '));
  repro_.clear();
  torch_repro_.clear();
  pending_line_.clear();
  initial_ops_ = st.ops > 0 ? st.ops : 0;
  progress_->setRange(0, 0);  // busy until the first step says how far it got
  progress_->setFormat(QString("ops left: %1  strategy: -  oracle calls: 0").arg(initial_ops_));
  state_->setText("Minifying " + QString::fromStdString(st.name) + " ...");
  minify_->setEnabled(false);
  cancel_->setEnabled(true);
  process_->start(cliPath(), args);
}

void MinifierPanel::cancel() {
  // SIGTERM: kiln-cli stops between evaluations and still writes what it has.
  if (isRunning()) process_->terminate();
}

void MinifierPanel::onOutput() {
  pending_line_ += QString::fromLocal8Bit(process_->readAll());
  static const QRegularExpression step(R"(^step (\d+) \[([^\]]+)\] .*: (\d+) -> (\d+) ops \(([\d.]+) s, (\d+) oracle calls\))");
  while (true) {
    int nl = int(pending_line_.indexOf('\n'));
    if (nl < 0) break;
    QString line = pending_line_.left(nl);
    pending_line_.remove(0, nl + 1);
    log_->appendPlainText(line);
    auto m = step.match(line);
    if (m.hasMatch()) {
      int before = m.captured(3).toInt(), after = m.captured(4).toInt();
      if (initial_ops_ < before) initial_ops_ = before;
      progress_->setRange(0, std::max(initial_ops_, 1));
      progress_->setValue(initial_ops_ - after);
      progress_->setFormat(QString("ops left: %1  strategy: %2  oracle calls: %3").arg(after).arg(m.captured(2), m.captured(6)));
    }
    if (line.startsWith("repro: ")) repro_ = line.mid(7).trimmed();
    if (line.startsWith("torch repro: ")) torch_repro_ = line.mid(13).trimmed();
  }
}

void MinifierPanel::onFinished(int code, QProcess::ExitStatus status) {
  if (process_) {
    pending_line_ += "\n";
    onOutput();
  }
  minify_->setEnabled(true);
  cancel_->setEnabled(false);
  progress_->setRange(0, 1);
  progress_->setValue(1);
  bool ok = status == QProcess::NormalExit && code == 0 && !torch_repro_.isEmpty();
  if (code == -1) {
    state_->setText("Could not start " + cliPath());
    progress_->setFormat("not started");
  } else if (ok) {
    state_->setText("Done: the repro is in " + repro_ + "; its PyTorch repro.py opens as a new entry.");
    progress_->setFormat(progress_->format().replace("ops left", "final ops"));
    emit reproReady(torch_repro_);
  } else {
    state_->setText(QString("The minifier stopped (exit %1); see the log.").arg(code));
  }
  emit finished(ok);
}

}  // namespace kiln::viewer
