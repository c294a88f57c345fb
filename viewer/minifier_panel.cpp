#include "viewer/minifier_panel.h"

#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "session/minify_stage.h"
#include "viewer/job_runner.h"

namespace kiln::viewer {

MinifierPanel::MinifierPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QHBoxLayout(this);
  auto* form = new QFormLayout;
  graph_ = new QComboBox(this);
  graph_->setMinimumContentsLength(24);
  graph_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  check_ = new QComboBox(this);
  check_->addItems({"accuracy", "compile-error", "crash", "cpu-gpu-mismatch", "oracle"});
  check_->setItemData(4, "Real PyTorch judges each candidate: its repro.py, eager against torch.compile (Inductor)", Qt::ToolTipRole);
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
  inject_->setToolTip("Make relu miscompile on purpose, to try the minifier: Kiln's (KILN_INJECT_BUG), or with the "
                     "oracle, Inductor's own inject_relu_bug_TESTING_ONLY (KILN_REPRO_INJECT)");
  oracle_python_ = new QLineEdit("python3", this);
  oracle_python_->setToolTip("oracle: the Python that imports torch; one long-lived worker per parallel job");
  torch_device_ = new QComboBox(this);
  torch_device_->addItems({"cpu", "cuda"});
  torch_device_->setToolTip("oracle: the device of the repro.py's inputs");
  auto oracle_fields = [this] {
    const bool oracle = check_->currentText() == "oracle";
    oracle_python_->setEnabled(oracle);
    torch_device_->setEnabled(oracle);
  };
  connect(check_, &QComboBox::currentTextChanged, this, oracle_fields);
  oracle_fields();
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
  form->addRow("PyTorch (oracle)", oracle_python_);
  form->addRow("Oracle device", torch_device_);
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
  runner_ = new JobRunner(this);
  // A job that threw reports through the runner alone: the panel must not stay busy.
  connect(runner_, &JobRunner::jobFinished, this, [this] {
    if (running_) onFinished(false, "The minifier stopped without a result (an internal error).");
  });
  connect(minify_, &QPushButton::clicked, this, &MinifierPanel::start);
  connect(cancel_, &QPushButton::clicked, this, &MinifierPanel::cancel);
}

MinifierPanel::~MinifierPanel() {
  // Cancels the run (its children are killed within 50 ms) and joins the worker
  // while the panel's members are still there.
  runner_->stop();
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
void MinifierPanel::setOraclePython(const QString& python, const QString& worker) {
  oracle_python_->setText(python);
  oracle_worker_ = worker;
}
bool MinifierPanel::isRunning() const { return running_; }
QString MinifierPanel::log() const { return log_->toPlainText(); }

void MinifierPanel::start() { startRun({}); }

void MinifierPanel::startFromNode(int stage, const QString& node) {
  if (isRunning() || !session_ || compile_ < 0) return;
  int i = graph_->findData(stage);
  if (i < 0) {
    // An unchanged stage is not offered by default, but its graph is as good as any.
    const SessionCompile& c = session_->compiles[size_t(compile_)];
    if (stage < 0 || size_t(stage) >= c.stages.size() || c.stages[size_t(stage)].kind != StageKind::Graph) return;
    graph_->addItem(QString::fromStdString(c.stages[size_t(stage)].name), stage);
    i = graph_->count() - 1;
  }
  graph_->setCurrentIndex(i);
  startRun(node);
}

void MinifierPanel::startRun(const QString& node) {
  if (isRunning() || !session_ || compile_ < 0 || graph_->currentIndex() < 0) {
    if (!session_) state_->setText("Open something and pick a graph first.");
    return;
  }
  const int stage = graph_->currentData().toInt();
  const SessionStage& st = session_->compiles[size_t(compile_)].stages[size_t(stage)];
  out_dir_ = QDir::temp().filePath("kiln-minify-" + QDateTime::currentDateTime().toString("yyyyMMdd-hhmmss-zzz"));
  StageMinifyRequest request;
  request.check = check_->currentText().toStdString();
  request.tolerance = tolerance_->value();
  request.jobs = jobs_->value();
  request.timeout_s = timeout_->value();
  const bool oracle = request.check == "oracle";
  const std::string bug = inject_->currentText() == "none" ? "none" : inject_->currentText().toStdString();
  // The injected bug is Inductor's for the oracle, Kiln's otherwise.
  request.inject_bug = oracle ? "none" : bug;
  if (oracle) {
    request.oracle_python = oracle_python_->text().trimmed().toStdString();
    request.oracle_worker = oracle_worker_.toStdString();
    request.torch_device = torch_device_->currentText().toStdString();
    request.repro_inject = bug == "none" ? "" : bug;
  }
  request.out_dir = out_dir_.toStdString();
  request.node = node.toStdString();
  const QString what = node.isEmpty() ? QString::fromStdString(st.name)
                                      : QString("the subgraph of %1 in %2").arg(node, QString::fromStdString(st.name));
  log_->clear();
  log_->appendPlainText(QString("minify %1 of %2: check %3, tolerance %4, %5 jobs, into %6")
                            .arg(what, QString::fromStdString(session_->compiles[size_t(compile_)].id),
                                 check_->currentText(), QString::number(request.tolerance, 'g', 10))
                            .arg(request.jobs)
                            .arg(out_dir_));
  repro_.clear();
  torch_repro_.clear();
  initial_ops_ = st.ops > 0 && node.isEmpty() ? st.ops : 0;  // a subgraph: the first step says
  progress_->setRange(0, 0);  // busy until the first step says how far it got
  progress_->setFormat(QString("ops left: %1  strategy: -  oracle calls: 0").arg(initial_ops_ > 0 ? QString::number(initial_ops_) : "-"));
  state_->setText("Minifying " + what + " ...");
  minify_->setEnabled(false);
  cancel_->setEnabled(true);
  running_ = true;
  std::shared_ptr<const Session> session = session_;
  const int compile = compile_;
  runner_->post("minify", [this, session, compile, stage, request](JobContext& job) mutable -> JobRunner::Done {
    request.cancel = job.cancel;
    job.deliver_when_cancelled = true;
    request.progress = [this](const minify::Progress& p) {
      if (!p.step) return;
      const minify::Step& s = *p.step;
      QString line = QString("step %1 [%2] %3: %4 -> %5 ops (%6 s, %7 oracle calls)")
                         .arg(s.index)
                         .arg(QString::fromStdString(s.strategy), QString::fromStdString(s.description))
                         .arg(s.nodes_before)
                         .arg(s.nodes_after)
                         .arg(p.elapsed_s, 0, 'f', 2)
                         .arg(p.oracle_calls);
      QMetaObject::invokeMethod(this, [this, b = int(s.nodes_before), a = int(s.nodes_after),
                                       strategy = QString::fromStdString(s.strategy), calls = p.oracle_calls, line] {
        onStep(b, a, strategy, calls, line);
      }, Qt::QueuedConnection);
    };
    Expected<StageMinifyResult> r = minify_stage(*session, compile, stage, request);
    return [this, r = std::move(r)] {
      if (!r) {
        onFinished(false, "The minifier stopped: " + QString::fromStdString(r.status().message()));
        return;
      }
      const minify::MinifyResult& run = r->run;
      log_->appendPlainText(QString("%1: %2 -> %3 ops, %4 oracle calls, %5 cache hits, wall %6 s")
                                .arg(run.cancelled ? "cancelled" : "done")
                                .arg(r->initial_ops)
                                .arg(r->final_ops)
                                .arg(run.stats.oracle_calls)
                                .arg(run.stats.cache_hits)
                                .arg(run.wall_s, 0, 'f', 2));
      if (!run.cancelled)
        log_->appendPlainText("original failure: " +
                              QString::fromStdString((run.original.signature.empty() ? run.original.kind : run.original.signature) +
                                                     ": " + run.original.detail));
      repro_ = QString::fromStdString(r->repro_dir);
      torch_repro_ = QString::fromStdString(r->torch_repro);
      if (!repro_.isEmpty()) log_->appendPlainText("repro: " + repro_ + "\ntorch repro: " + torch_repro_);
      if (run.cancelled)
        onFinished(false, repro_.isEmpty() ? "Cancelled before the first step." : "Cancelled; what it had is in " + repro_ + ".");
      else
        onFinished(true, "Done: the repro is in " + repro_ + "; its PyTorch repro.py opens as a new entry.");
    };
  });
}

void MinifierPanel::cancel() {
  if (isRunning()) runner_->cancel("minify");
}

void MinifierPanel::onStep(int ops_before, int ops_after, const QString& strategy, int oracle_calls, const QString& line) {
  log_->appendPlainText(line);
  if (initial_ops_ < ops_before) initial_ops_ = ops_before;
  progress_->setRange(0, std::max(initial_ops_, 1));
  progress_->setValue(initial_ops_ - ops_after);
  progress_->setFormat(QString("ops left: %1  strategy: %2  oracle calls: %3").arg(ops_after).arg(strategy).arg(oracle_calls));
}

void MinifierPanel::onFinished(bool ok, const QString& message) {
  running_ = false;
  minify_->setEnabled(true);
  cancel_->setEnabled(false);
  progress_->setRange(0, 1);
  progress_->setValue(1);
  state_->setText(message);
  if (ok) {
    progress_->setFormat(progress_->format().replace("ops left", "final ops"));
    emit reproReady(torch_repro_);
  } else {
    progress_->setFormat("stopped");
  }
  emit finished(ok);
}

}  // namespace kiln::viewer
