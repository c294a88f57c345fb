// The workbench's side panels: source with marked lines, guards and
// recompiles with the input signature check, numerics, and the minifier.
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "viewer/code_editor.h"
#include "viewer/graph_view.h"
#include "viewer/guard_models.h"
#include "viewer/job_runner.h"
#include "viewer/minifier_panel.h"
#include "viewer/numerics_detail.h"
#include "viewer/numerics_model.h"
#include "viewer/workbench.h"

namespace kiln::viewer {

namespace {

const QColor kBreakLine(230, 120, 0), kGuardLine(60, 120, 220), kNodeLine(120, 120, 120);

// wrap: long texts (guards, reasons) wrap inside their column and the rows
// grow to fit them, rather than being cut; for short tables.
QTableView* make_table(QWidget* parent, QAbstractItemModel* model, bool wrap = false) {
  auto* t = new QTableView(parent);
  t->setModel(model);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->setSelectionMode(QAbstractItemView::SingleSelection);
  t->verticalHeader()->hide();
  t->verticalHeader()->setDefaultSectionSize(t->fontMetrics().height() + 6);
  t->horizontalHeader()->setStretchLastSection(true);
  t->setWordWrap(wrap);
  if (wrap) {
    t->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    t->setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
  }
  return t;
}

QLabel* heading(const QString& text, QWidget* parent) {
  auto* l = new QLabel("<b>" + text + "</b>", parent);
  l->setContentsMargins(2, 4, 2, 2);
  return l;
}

bool same_file(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  return a == b || QFileInfo(QString::fromStdString(a)).fileName() == QFileInfo(QString::fromStdString(b)).fileName();
}

const char* const kNumericsHint =
    "Per node: how many elements are over the tolerance, and max abs and relative error of each rung against the same "
    "graph run in float64.";

QString numerics_summary(const NumericsResult& r) {
  QString notes = QString("%1 nodes measured against float64 eager.").arg(r.rows.size());
  if (r.first_divergent >= 0) {
    const NodeNumerics& n = r.rows[size_t(r.first_divergent)];
    notes += QString(" First node over %1: <b>%2</b> (%3), first on rung <b>%4</b>: %5.")
                 .arg(r.tolerance)
                 .arg(QString::fromStdString(n.name), QString::fromStdString(n.target), QString(rung_name(r.first_divergent_rung)),
                      over_text(n.errors[r.first_divergent_rung]));
  } else
    notes += " No node is over the tolerance.";
  for (const std::string& n : r.notes) notes += "<br><span style='color:gray'>" + QString::fromStdString(n).toHtmlEscaped() + "</span>";
  return notes;
}

}  // namespace

QWidget* Workbench::buildGuardsPanel() {
  auto* split = new QSplitter(Qt::Horizontal, this);

  auto* left = new QWidget(split);
  auto* ll = new QVBoxLayout(left);
  ll->setContentsMargins(4, 0, 4, 4);
  ll->addWidget(heading("Guards of the selected compile", left));
  guards_ = new GuardModel(this);
  // Guards can be long (GLOBAL_STATE is a page of JSON): one row each, cut, the whole text in the tooltip.
  guard_table_ = make_table(left, guards_);
  guard_table_->horizontalHeader()->setSectionResizeMode(GuardModel::Kind, QHeaderView::ResizeToContents);
  guard_table_->horizontalHeader()->setSectionResizeMode(GuardModel::Guard, QHeaderView::Stretch);
  guard_table_->horizontalHeader()->setSectionResizeMode(GuardModel::Line, QHeaderView::ResizeToContents);
  guard_table_->horizontalHeader()->setStretchLastSection(false);
  connect(guard_table_, &QTableView::clicked, this, [this](const QModelIndex& i) {
    const SessionGuard& g = guards_->guard(i.row());
    if (g.line > 0) jumpToSource(g.file, g.line);
  });
  ll->addWidget(guard_table_);
  split->addWidget(left);

  auto* mid = new QWidget(split);
  auto* ml = new QVBoxLayout(mid);
  ml->setContentsMargins(4, 0, 4, 4);
  ml->addWidget(heading("Check an input signature", mid));
  auto* hint = new QLabel("Edit a dtype, a shape or a scalar's value: the first guard of each cache entry of this frame that "
                          "would fail is shown.", mid);
  hint->setWordWrap(true);
  ml->addWidget(hint);
  signature_ = new SignatureModel(this);
  auto* sig_table = make_table(mid, signature_);
  sig_table->setEditTriggers(QAbstractItemView::AllEditTriggers);
  sig_table->horizontalHeader()->setSectionResizeMode(SignatureModel::Input, QHeaderView::Stretch);
  sig_table->horizontalHeader()->setStretchLastSection(false);
  sig_table->setMaximumHeight(130);
  ml->addWidget(sig_table);
  signature_verdict_ = new QLabel(mid);
  signature_verdict_->setWordWrap(true);
  signature_verdict_->setTextFormat(Qt::RichText);
  signature_verdict_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  signature_verdict_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // A frame with many cache entries writes a long verdict: it scrolls rather than being cut.
  auto* verdict_scroll = new QScrollArea(mid);
  verdict_scroll->setObjectName("signature_verdict_scroll");
  verdict_scroll->setWidget(signature_verdict_);
  verdict_scroll->setWidgetResizable(true);
  verdict_scroll->setFrameShape(QFrame::NoFrame);
  verdict_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  ml->addWidget(verdict_scroll, 1);
  connect(signature_, &SignatureModel::signatureEdited, this, &Workbench::checkSignature);
  split->addWidget(mid);

  auto* right = new QWidget(split);
  auto* rl = new QVBoxLayout(right);
  rl->setContentsMargins(4, 0, 4, 4);
  rl->addWidget(heading("Compiles and recompiles", right));
  recompiles_ = new RecompileModel(this);
  recompile_table_ = make_table(right, recompiles_, true);
  recompile_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  // Function names of resumed frames are long (torch_dynamo_resume_in_f_at_4):
  // updateGuards sizes the column to them, up to a cap, leaving the rest to the reason.
  recompile_table_->horizontalHeader()->setSectionResizeMode(RecompileModel::Function, QHeaderView::Interactive);
  recompile_table_->horizontalHeader()->setSectionResizeMode(RecompileModel::Reason, QHeaderView::Stretch);
  recompile_table_->horizontalHeader()->setStretchLastSection(false);
  connect(recompile_table_, &QTableView::clicked, this, [this](const QModelIndex& i) {
    showCompile(session_, recompiles_->compileAt(i.row()));
  });
  rl->addWidget(recompile_table_, 2);
  rl->addWidget(heading("Graph breaks", right));
  // A table rather than a tree: its rows grow to show a wrapped reason whole.
  breaks_ = new QTableWidget(0, 3, right);
  breaks_->setHorizontalHeaderLabels({"Line", "Reason", "Compile"});
  breaks_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  breaks_->setSelectionBehavior(QAbstractItemView::SelectRows);
  breaks_->setSelectionMode(QAbstractItemView::SingleSelection);
  breaks_->setWordWrap(true);
  breaks_->setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
  breaks_->verticalHeader()->hide();
  breaks_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  breaks_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  breaks_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  breaks_->horizontalHeader()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
  breaks_->horizontalHeader()->setStretchLastSection(false);
  breaks_->horizontalHeader()->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
  connect(breaks_, &QTableWidget::cellClicked, this, [this](int row, int) {
    QTableWidgetItem* item = breaks_->item(row, 0);
    if (item) jumpToSource(item->data(Qt::UserRole).toString().toStdString(), item->text().toInt());
  });
  rl->addWidget(breaks_, 1);
  split->addWidget(right);
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 3);
  split->setStretchFactor(2, 5);
  // The signature check needs little width; the recompile reasons need the most.
  split->setSizes({400, 280, 480});
  return split;
}

void Workbench::updateGuards() {
  auto s = currentSession();
  const SessionCompile* c = currentCompile();
  guards_->setGuards(c ? c->guards : std::vector<SessionGuard>{});
  if (recompiles_->rowCount() == 0 || !s || recompiles_property_session_ != s.get()) {
    recompiles_->setSession(s);
    recompiles_property_session_ = s.get();
    QHeaderView* header = recompile_table_->horizontalHeader();
    int fit = std::max(header->sectionSizeHint(RecompileModel::Function),
                       static_cast<QAbstractItemView*>(recompile_table_)->sizeHintForColumn(RecompileModel::Function));
    header->resizeSection(RecompileModel::Function, std::min(fit, 150));
  }
  for (int r = 0; r < recompiles_->rowCount(); ++r)
    if (recompiles_->compileAt(r) == compile_) recompile_table_->selectRow(r);
  breaks_->setRowCount(0);
  if (s)
    for (const SessionCompile& sc : s->compiles)
      for (const SessionBreak& b : sc.breaks) {
        int row = breaks_->rowCount();
        breaks_->insertRow(row);
        auto* line = new QTableWidgetItem(QString::number(b.line));
        line->setData(Qt::UserRole, QString::fromStdString(b.file));
        auto* reason = new QTableWidgetItem(QString::fromStdString(b.reason));
        QString tip = QString::fromStdString(b.detail.empty() ? b.reason : b.detail);
        if (!b.code.empty()) tip += "\n\n" + QString::fromStdString(b.code);
        reason->setToolTip(tip);
        breaks_->setItem(row, 0, line);
        breaks_->setItem(row, 1, reason);
        breaks_->setItem(row, 2, new QTableWidgetItem(QString::fromStdString(sc.id)));
      }
  signature_->setInputs(c ? signature_of(*c) : std::vector<SignatureInput>{});
  checkSignature();
}

void Workbench::checkSignature() {
  auto s = currentSession();
  const SessionCompile* c = currentCompile();
  guards_->setFailedRow(-1);
  if (!s || !c || signature_->rowCount() == 0) {
    signature_verdict_->setText(c && !c->guards.empty() && signature_->rowCount() == 0
                                    ? "<span style='color:gray'>No guards on frame inputs to check.</span>"
                                    : "");
    return;
  }
  // The cache entries of this frame, in compile order, as Dynamo tries them.
  QString out;
  bool hit = false;
  for (const SessionCompile& e : s->compiles) {
    if (e.frame != c->frame) continue;
    std::string why;
    int failed = first_failing_guard(e.guards, signature_->inputs(), &why);
    if (failed < 0) {
      out += QString("<div style='color:#287a3c'>[%1] guards pass: this call would run entry %1</div>").arg(QString::fromStdString(e.id));
      hit = true;
      break;
    }
    out += QString("<div>[%1] <span style='color:#c03030'>%2</span><br>&nbsp;&nbsp;failing guard: <code>%3</code></div>")
               .arg(QString::fromStdString(e.id), QString::fromStdString(why).toHtmlEscaped(),
                    QString::fromStdString(e.guards[size_t(failed)].text).toHtmlEscaped().left(160));
    if (&e == c) guards_->setFailedRow(failed);
  }
  if (!hit) out += "<div><b>No entry matches: the call would recompile.</b></div>";
  signature_verdict_->setText(out);
}

QString Workbench::signatureVerdict() const { return signature_verdict_->text(); }

QString Workbench::numericsNotes() const { return numerics_notes_->text(); }

void Workbench::updateSource() {
  auto s = currentSession();
  if (!s) return;
  if (source_shown_for_ != s.get() || !quoted_source_shown_.empty()) {
    source_shown_for_ = s.get();
    quoted_source_shown_.clear();
    source_dock_->setWindowTitle("Source");
    source_dock_->setToolTip({});
    if (!s->source_text.empty()) {
      source_->setCode(QString::fromStdString(s->source_text), "python");
    } else if (!s->known_lines.empty()) {
      // The dump was made elsewhere: only the lines it quotes are known.
      QString text;
      std::vector<int> numbers;
      for (const SourceLine& l : s->known_lines) {
        text += QString::fromStdString(l.code) + "\n";
        numbers.push_back(l.line);
      }
      text.chop(1);
      source_->setCode(text, "python");
      source_->setLineNumbers(numbers);
    } else {
      source_->showNotice(s->kind == Session::Kind::Trace
                              ? "The source of this dump is not on this machine, and the dump quotes no lines of it."
                              : "No source.");
    }
  }
  source_->clearMarks();
  for (const SessionCompile& c : s->compiles)
    for (const SessionBreak& b : c.breaks)
      if (same_file(b.file, s->source_file) && b.line > 0)
        source_->markLine(b.line, kBreakLine,
                          QString("Graph break [%1]: %2%3")
                              .arg(QString::fromStdString(c.id), QString::fromStdString(b.reason),
                                   b.detail.empty() ? QString() : "\n" + QString::fromStdString(b.detail).left(600)));
  if (const SessionCompile* c = currentCompile())
    for (const SessionGuard& g : c->guards)
      if (g.line > 0 && same_file(g.file, s->source_file))
        source_->markLine(g.line, kGuardLine, QString("Guard [%1]: %2").arg(QString::fromStdString(c->id), QString::fromStdString(g.text).left(300)));
  if (const SessionCompile* c = currentCompile()) {
    int line = c->line;
    if (!c->breaks.empty()) line = c->breaks.front().line;
    if (line > 0 && same_file(c->file.empty() ? s->source_file : c->file, s->source_file)) source_->goToLine(line);
  }
}

bool Workbench::showQuotedSource(const std::string& file) {
  auto s = currentSession();
  if (!s) return false;
  auto it = s->quoted_lines.find(file);
  for (auto q = s->quoted_lines.begin(); q != s->quoted_lines.end() && it == s->quoted_lines.end(); ++q)
    if (same_file(q->first, file)) it = q;
  if (it == s->quoted_lines.end()) return false;
  if (quoted_source_shown_ == it->first) return true;
  QString text;
  std::vector<int> numbers;
  for (const SourceLine& l : it->second) {
    text += QString::fromStdString(l.code) + "\n";
    numbers.push_back(l.line);
  }
  text.chop(1);
  source_->setCode(text, "python");
  source_->setLineNumbers(numbers);
  quoted_source_shown_ = it->first;
  // Which file: the view no longer shows the session's own source.
  source_dock_->setWindowTitle("Source: " + QFileInfo(QString::fromStdString(it->first)).fileName() + " (lines the dump quotes)");
  source_dock_->setToolTip(QString::fromStdString(it->first));
  return true;
}

void Workbench::jumpToSource(const std::string& file, int line) {
  auto s = currentSession();
  if (!s || line <= 0) return;
  if (file.empty() || same_file(file, s->source_file)) {
    if (!quoted_source_shown_.empty()) updateSource();
  } else if (!showQuotedSource(file)) {
    status_->setText(QString("%1:%2 is not the session's source file, and the dump quotes no line of it")
                         .arg(QString::fromStdString(file))
                         .arg(line));
    return;
  }
  source_->goToLine(line);
  showPanel("source");
}

QWidget* Workbench::buildNumericsPanel() {
  auto* panel = new QWidget(this);
  auto* layout = new QVBoxLayout(panel);
  layout->setContentsMargins(4, 2, 4, 4);
  auto* bar = new QHBoxLayout;
  auto* measure = new QPushButton("Measure this stage", panel);
  measure->setToolTip("Run the shown graph on every rung (eager, aot_eager, decomp_eager, kiln) and compare each node "
                      "with the graph run in float64 on the eager kernels (Ctrl+M)");
  tolerance_ = new QDoubleSpinBox(panel);
  tolerance_->setDecimals(8);
  tolerance_->setRange(0, 1);
  tolerance_->setSingleStep(1e-5);
  tolerance_->setValue(1e-4);
  tolerance_->setToolTip("Relative tolerance: nodes over it are tinted and the first is the divergent one");
  auto* jump = new QPushButton("First divergent node", panel);
  jump->setToolTip("Select the first node over the tolerance, in graph order");
  colour_by_error_ = new QCheckBox("Colour graph by error", panel);
  colour_by_error_->setChecked(true);
  auto* cancel = new QPushButton("Cancel", panel);
  cancel->setToolTip("Stop the measurement");
  bar->addWidget(measure);
  bar->addWidget(cancel);
  bar->addWidget(new QLabel("Tolerance", panel));
  bar->addWidget(tolerance_);
  bar->addWidget(jump);
  bar->addWidget(colour_by_error_);
  bar->addStretch(1);
  layout->addLayout(bar);
  numerics_notes_ = new QLabel(kNumericsHint, panel);
  numerics_notes_->setWordWrap(true);
  layout->addWidget(numerics_notes_);
  numerics_ = new NumericsModel(this);
  // The table and, beside it, the selected row's histogram and worst elements.
  auto* split = new QSplitter(Qt::Horizontal, panel);
  split->setObjectName("numerics_split");
  numerics_table_ = make_table(split, numerics_);
  numerics_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  numerics_table_->horizontalHeader()->setStretchLastSection(false);
  // The relative errors and the counts fit beside the detail; max abs is in
  // each cell's tooltip and the detail, and comes back from the header's menu.
  for (int k = 0; k < kRungs; ++k) numerics_table_->setColumnHidden(NumericsModel::FirstRung + 2 * k, true);
  numerics_table_->horizontalHeader()->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(numerics_table_->horizontalHeader(), &QWidget::customContextMenuRequested, this, [this](const QPoint& at) {
    QMenu menu;
    QAction* abs = menu.addAction("Max abs columns");
    abs->setCheckable(true);
    abs->setChecked(!numerics_table_->isColumnHidden(NumericsModel::FirstRung));
    if (menu.exec(numerics_table_->horizontalHeader()->mapToGlobal(at)) == abs)
      for (int k = 0; k < kRungs; ++k) numerics_table_->setColumnHidden(NumericsModel::FirstRung + 2 * k, !abs->isChecked());
  });
  // Long op names (aten::threshold_backward.default) are cut, whole in the tooltip.
  numerics_table_->horizontalHeader()->setMaximumSectionSize(fontMetrics().horizontalAdvance("aten::convolution.default"));
  numerics_detail_ = new NumericsDetail(split);
  split->addWidget(numerics_table_);
  split->addWidget(numerics_detail_);
  split->setStretchFactor(0, 7);
  split->setStretchFactor(1, 3);
  split->setSizes({7 * fontMetrics().horizontalAdvance("x") * 20, 3 * fontMetrics().horizontalAdvance("x") * 20});
  layout->addWidget(split, 1);
  connect(numerics_table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] { showNumericsDetail(); });
  connect(numerics_detail_, &NumericsDetail::minifyRequested, this, &Workbench::minifyFromNode);
  connect(measure, &QPushButton::clicked, this, &Workbench::measureNumerics);
  connect(cancel, &QPushButton::clicked, this, &Workbench::cancelNumerics);
  connect(jump, &QPushButton::clicked, this, &Workbench::jumpToFirstDivergent);
  connect(colour_by_error_, &QCheckBox::toggled, this, [this] { applyColourMode(); });
  connect(numerics_table_, &QTableView::clicked, this, [this](const QModelIndex& i) {
    if (!shown_graph_ || !numerics_shown_) return;
    NodeId id = shown_graph_->find(numerics_->result().rows[size_t(i.row())].name);
    if (id != kNoNode) graph_->selectNodes({id});
  });
  return panel;
}

bool Workbench::numericsRunning() const { return !numerics_runner_->isIdle(); }

std::optional<Workbench::NumericsKey> Workbench::numericsKey() const {
  auto s = currentSession();
  const SessionCompile* c = currentCompile();
  if (!s || !c || graph_stage_ < 0 || graph_stage_ >= int(c->stages.size())) return std::nullopt;
  return NumericsKey{s->path, c->id, c->stages[size_t(graph_stage_)].name};
}

void Workbench::showNumericsOfStage() {
  const std::optional<NumericsKey> key = numericsKey();
  auto kept = key ? numerics_results_.find(*key) : numerics_results_.end();
  if (kept != numerics_results_.end()) {
    const bool fresh = numerics_shown_ != key;
    if (fresh) numerics_->setResult(kept->second);
    numerics_shown_ = key;
    // The node selected in the graph is the row to detail.
    if (fresh && !selection_.empty())
      for (int r = 0; r < numerics_->rowCount(); ++r)
        if (numerics_->result().rows[size_t(r)].name == selection_.front()) numerics_table_->selectRow(r);
    numerics_notes_->setText(numerics_summary(kept->second));
    showNumericsDetail();
  } else {
    if (numerics_->rowCount() > 0) numerics_->clear();
    numerics_shown_.reset();
    numerics_detail_->clear();
    if (numerics_running_ && numerics_running_ == key)
      numerics_notes_->setText("Measuring ...");
    else if (numerics_running_)
      // Not lost: the run goes on, and its result waits for its stage.
      numerics_notes_->setText(QString("Measuring %1 in the background: its result is shown when you return to it.")
                                   .arg(QString::fromStdString(numerics_running_->stage).toHtmlEscaped()));
    else
      numerics_notes_->setText(kNumericsHint);
  }
  applyColourMode();
}

void Workbench::showNumericsDetail() {
  if (!numerics_shown_) {
    numerics_detail_->clear();
    return;
  }
  const QModelIndex current = numerics_table_->selectionModel()->currentIndex();
  numerics_detail_->setRow(numerics_->result(), current.isValid() ? current.row() : numerics_->result().first_divergent);
  numerics_detail_->setMinifyEnabled(!minifier_->isRunning());
}

bool Workbench::minifyFromNode(const QString& node) {
  const SessionCompile* c = currentCompile();
  int stage = -1;
  if (c && numerics_shown_)
    for (int i = 0; i < int(c->stages.size()); ++i)
      if (c->stages[size_t(i)].name == numerics_shown_->stage) stage = i;
  if (stage < 0 || minifier_->isRunning()) {
    status_->setText(minifier_->isRunning() ? "The minifier is already running." : "Measure the stage first.");
    return false;
  }
  minifier_->setCompile(currentSession(), compile_, stage);
  minifier_->startFromNode(stage, node);
  if (!minifier_->isRunning()) {
    status_->setText("The minifier could not start on " + node + ".");
    return false;
  }
  numerics_detail_->setMinifyEnabled(false);
  log_->appendPlainText("numerics: minifying the subgraph of " + node + " in " + QString::fromStdString(numerics_shown_->stage));
  showPanel("minifier");
  return true;
}

void Workbench::cancelNumerics() {
  if (!numericsRunning()) return;
  numerics_runner_->cancel("numerics");
  numerics_running_.reset();
  showNumericsOfStage();
  numerics_notes_->setText("Numerics cancelled.");
}

void Workbench::measureNumerics() {
  auto g = shown_graph_;
  const std::optional<NumericsKey> key = numericsKey();
  if (!g || !key || loadedGraph(graph_stage_) != g) {
    numerics_notes_->setText("Show a graph stage first.");
    return;
  }
  double tol = tolerance_->value();
  int stage = graph_stage_;
  // A new run replaces the stage's kept result (the tolerance may differ).
  numerics_results_.erase(*key);
  numerics_running_ = key;
  showNumericsOfStage();
  showPanel("numerics");
  // Sessions are not changed once loaded: the worker may read this one while it lives.
  std::shared_ptr<const Session> session = currentSession();
  const SessionCompile* c = currentCompile();
  numerics_runner_->post("numerics", [this, g, tol, stage, key = *key, session, c](JobContext& ctx) -> JobRunner::Done {
    ctx.progress(0.1, "numerics: running every rung");
    std::shared_ptr<const Graph> measured = g;
    std::string replayed;
    if (session && c && stage >= 0 && size_t(stage) < c->stages.size())
      if (auto runnable = numerics_graph(*session, *c, c->stages[size_t(stage)], &replayed)) measured = *runnable;
    auto r = measure_numerics(*measured, tol, ctx.cancel);
    if (r && !replayed.empty()) r->notes.insert(r->notes.begin(), replayed);
    const QString stage_name = QString::fromStdString(key.stage);
    if (!r) {
      QString msg = QString::fromStdString(r.status().message());
      return [this, key, msg, stage_name] {
        if (numerics_running_ == key) numerics_running_.reset();
        status_->setText("Numerics of " + stage_name + " could not run: " + msg);
        log_->appendPlainText("numerics of " + stage_name + ": " + msg);
        showNumericsOfStage();
        if (numericsKey() == key) numerics_notes_->setText("Numerics could not run: " + msg.toHtmlEscaped());
        emit numericsDone();
      };
    }
    return [this, r = std::move(*r), key, stage_name]() mutable {
      if (numerics_running_ == key) numerics_running_.reset();
      const QString first = r.first_divergent >= 0
                                ? ", first divergent: " + QString::fromStdString(r.rows[size_t(r.first_divergent)].name)
                                : QString();
      const bool here = numericsKey() == key;
      status_->setText(QString("Numerics of %1: %2 nodes measured%3%4")
                           .arg(stage_name)
                           .arg(r.rows.size())
                           .arg(first, here ? QString() : " (shown when you return to the stage)"));
      numerics_results_[key] = std::move(r);
      showNumericsOfStage();
      emit numericsDone();
    };
  });
}

void Workbench::applyColourMode() {
  // The graph shown may still be the last stage's while the new one loads.
  const bool current = shown_graph_ && loadedGraph(graph_stage_) == shown_graph_;
  const bool by_error = current && numerics_shown_ && colour_by_error_->isChecked();
  const SessionStage* st = currentCompile() && graph_stage_ >= 0 ? &currentCompile()->stages[size_t(graph_stage_)] : nullptr;
  const bool has_groups = current && st && st->graph == shown_graph_ && !st->fusion_groups.empty();
  int mode = by_error ? 2 : user_colour_mode_ == 1 && !has_groups ? 0 : user_colour_mode_;
  if (by_error) {
    // By name: the graph measured may be the stage as `repro run` replays it.
    std::vector<double> errors(shown_graph_->size(), std::nan(""));
    for (const NodeNumerics& n : numerics_->result().rows) {
      NodeId id = shown_graph_->find(n.name);
      if (id != kNoNode) errors[size_t(id)] = n.worst_rel();
    }
    graph_->setNodeErrors(errors);
  }
  {
    const QSignalBlocker quiet(colour_mode_);  // not the user's pick
    colour_mode_->setCurrentIndex(mode);
  }
  graph_->setColorMode(mode == 0 ? GraphColorMode::OpKind : mode == 1 ? GraphColorMode::FusionGroup : GraphColorMode::Numerics);
}

void Workbench::jumpToFirstDivergent() {
  int row = numerics_->result().first_divergent;
  if (row < 0) {
    status_->setText(numerics_->rowCount() ? "No node is over the tolerance." : "Measure the stage first.");
    return;
  }
  numerics_table_->selectRow(row);
  numerics_table_->scrollTo(numerics_->index(row, 0));
  if (shown_graph_) onNodeClicked(shown_graph_->find(numerics_->result().rows[size_t(row)].name));
}

QWidget* Workbench::buildMinifierPanel() {
  minifier_ = new MinifierPanel(this);
  connect(minifier_, &MinifierPanel::reproReady, this, [this](const QString& repro) {
    log_->appendPlainText("minifier: wrote " + repro);
    open({repro});
  });
  // "Minify from here" waits while a run is going (built after the numerics panel).
  connect(minifier_, &MinifierPanel::finished, numerics_detail_, [this] { numerics_detail_->setMinifyEnabled(true); });
  return minifier_;
}

}  // namespace kiln::viewer
