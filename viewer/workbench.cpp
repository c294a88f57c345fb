#include "viewer/workbench.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QHBoxLayout>
#include <QVBoxLayout>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QActionGroup>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QMouseEvent>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QResizeEvent>
#include <QPushButton>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTextBrowser>
#include <QTimer>
#include <QTreeView>

#include <chrono>
#include <tuple>

#include "core/store/workspace.h"
#include "viewer/code_editor.h"
#include "viewer/code_view.h"
#include "viewer/compare_view.h"
#include "viewer/corpus_panel.h"
#include "viewer/graph_view.h"
#include "viewer/job_runner.h"
#include "viewer/minifier_panel.h"
#include "viewer/session_model.h"
#include "viewer/trace_panel.h"

namespace kiln::viewer {

namespace {
constexpr int kMaxRecent = 10;

// Where the workspace database lives: KILN_WORKSPACE, else the user's data folder.
QString workspace_path() {
  QByteArray env = qgetenv("KILN_WORKSPACE");
  if (!env.isEmpty()) return QString::fromLocal8Bit(env);
  QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  if (dir.isEmpty()) return {};
  QDir().mkpath(dir);
  return dir + "/workspace.kiln";
}
}  // namespace

Workbench::Workbench(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("Kiln");
  setAcceptDrops(true);
  setDockNestingEnabled(true);
  loader_ = new JobRunner(this);
  viewer_ = new JobRunner(this);
  numerics_runner_ = new JobRunner(this);
  trace_runner_ = new JobRunner(this);
  model_ = new SessionModel(this);

  setCentralWidget(buildStagePanel());
  buildDocks();
  buildMenus();

  status_ = new QLabel("Open a Kiln program, a TORCH_TRACE log or a TORCH_COMPILE_DEBUG folder (File > Open, or drop it here).", this);
  // Long messages are cut, not allowed to widen the window.
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  status_->setMinimumWidth(100);
  status_->setObjectName("busy_status");
  progress_ = new QProgressBar(this);
  progress_->setObjectName("busy_progress");  // the panels have bars of their own
  progress_->setMaximumWidth(260);
  progress_->setRange(0, 1000);
  progress_->hide();
  cancel_ = new QPushButton("Cancel", this);
  cancel_->hide();
  connect(cancel_, &QPushButton::clicked, this, [this] {
    loader_->cancelAll();
    cancelNumerics();
    corpus_->cancel();
  });
  statusBar()->addWidget(status_, 1);
  resize(1600, 1000);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);

  for (JobRunner* r : {loader_, numerics_runner_}) {
    connect(r, &JobRunner::jobProgress, this, [this](const QString&, double f, const QString& what) { setBusy(what, f); });
    connect(r, &JobRunner::jobStarted, this, [this](const QString&) { updateBusy(); });
    connect(r, &JobRunner::jobFinished, this, [this](const QString&) { updateBusy(); });
  }
  // A load that failed or was cancelled: the source panel shows the session it showed before.
  connect(loader_, &JobRunner::jobFinished, this, [this](const QString&) {
    if (opening_source_.isEmpty() || !loader_->isIdle()) return;
    opening_source_.clear();
    if (currentSession()) updateSource();
  });
  // A run whose result never came (cancelled, replaced) leaves no "Measuring" behind.
  connect(numerics_runner_, &JobRunner::jobFinished, this, [this](const QString&) {
    if (numerics_running_ && numerics_runner_->isIdle()) {
      numerics_running_.reset();
      showNumericsOfStage();
    }
  });
  connect(corpus_, &CorpusPanel::progress, this, [this](int done, int total) {
    setBusy(QString("op corpus: %1 / %2 cases").arg(done).arg(total), double(done) / std::max(total, 1));
  });
  connect(corpus_, &CorpusPanel::runFinished, this, [this](const QString& summary) {
    status_->setText("Op corpus: " + summary);
    updateBusy();
  });
}

namespace {
// Sensible first sizes: the tree and the side panels readable, the graph the biggest.
const std::map<int, double> kFirstDockShares = {
    {Qt::LeftDockWidgetArea, 0.28}, {Qt::RightDockWidgetArea, 0.24}, {Qt::BottomDockWidgetArea, 0.29}};
}  // namespace

void Workbench::showEvent(QShowEvent* e) {
  QMainWindow::showEvent(e);
  if (sized_) return;
  sized_ = true;
  // Docks laid out before the first show can push the window wider than asked: ask again.
  resize(1600, 1000);
  dock_shares_ = kFirstDockShares;
  applyDockShares();
}

void Workbench::resizeEvent(QResizeEvent* e) {
  QMainWindow::resizeEvent(e);
  if (!sized_ || dock_shares_pending_) return;
  // Once the layout has the new size; many resizes (a drag of the window's edge) make one.
  dock_shares_pending_ = true;
  QTimer::singleShot(0, this, [this] {
    dock_shares_pending_ = false;
    applyDockShares();
  });
}

bool Workbench::event(QEvent* e) {
  // A press that reaches the window itself, on no child, is on a dock separator.
  if (e->type() == QEvent::MouseButtonPress) {
    auto* m = static_cast<QMouseEvent*>(e);
    separator_pressed_ = m->button() == Qt::LeftButton && !childAt(m->position().toPoint());
  }
  const bool handled = QMainWindow::event(e);
  if (e->type() == QEvent::MouseButtonRelease && separator_pressed_) {
    separator_pressed_ = false;
    // After the layout applies the last move (it does so on a zero timer).
    QTimer::singleShot(0, this, [this] { recordDockShares(); });
  }
  return handled;
}

QDockWidget* Workbench::shownDock(Qt::DockWidgetArea area) const {
  for (QDockWidget* d : docks_)
    if (!d->isFloating() && d->isVisible() && dockWidgetArea(d) == area) return d;
  return nullptr;
}

void Workbench::applyDockShares() {
  QList<QDockWidget*> across, down;
  QList<int> widths, heights;
  for (const auto& [area, share] : dock_shares_) {
    QDockWidget* d = shownDock(Qt::DockWidgetArea(area));
    if (!d) continue;
    const bool side = area == Qt::LeftDockWidgetArea || area == Qt::RightDockWidgetArea;
    (side ? across : down) << d;
    (side ? widths : heights) << int(share * (side ? width() : height()));
  }
  if (!across.isEmpty()) resizeDocks(across, widths, Qt::Horizontal);
  if (!down.isEmpty()) resizeDocks(down, heights, Qt::Vertical);
}

void Workbench::recordDockShares() {
  for (int area : {Qt::LeftDockWidgetArea, Qt::RightDockWidgetArea, Qt::TopDockWidgetArea, Qt::BottomDockWidgetArea}) {
    QDockWidget* d = shownDock(Qt::DockWidgetArea(area));
    if (!d) continue;
    const bool side = area == Qt::LeftDockWidgetArea || area == Qt::RightDockWidgetArea;
    dock_shares_[area] = side ? double(d->width()) / std::max(width(), 1) : double(d->height()) / std::max(height(), 1);
  }
}

void Workbench::resetLayout() {
  for (QDockWidget* d : docks_) {
    d->setFloating(false);
    removeDockWidget(d);
  }
  for (QDockWidget* d : docks_) {
    addDockWidget(Qt::DockWidgetArea(d->property("kiln_home_area").toInt()), d);
    d->show();
  }
  arrangeDocks();
  dock_shares_ = kFirstDockShares;
  applyDockShares();
}

Workbench::~Workbench() {
  // Workers first: their results must not arrive at half-destroyed panels.
  loader_->stop();
  viewer_->stop();
  numerics_runner_->stop();
  trace_runner_->stop();
  compare_->stop();
}

void Workbench::closeEvent(QCloseEvent* e) {
  QSettings settings;
  settings.setValue("window/state", saveState());
  // Work stops as the window goes: a load, a layout or a numerics run notices
  // within a pass or a kernel, the minifier kills its children, and the
  // destructor's joins are then short (tests: closingDuringALoadEndsQuickly).
  loader_->cancelAll();
  viewer_->cancelAll();
  numerics_runner_->cancelAll();
  trace_runner_->cancelAll();
  minifier_->cancel();
  QMainWindow::closeEvent(e);
}

QDockWidget* Workbench::dock(const QString& title, const QString& name, QWidget* w, Qt::DockWidgetArea area) {
  auto* d = new QDockWidget(title, this);
  d->setObjectName(name);
  d->setWidget(w);
  d->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable | QDockWidget::DockWidgetClosable);
  d->setProperty("kiln_home_area", int(area));  // where View > Reset layout puts it back
  addDockWidget(area, d);
  docks_.push_back(d);
  return d;
}

void Workbench::buildDocks() {
  tree_ = new QTreeView(this);
  tree_->setModel(model_);
  tree_->setUniformRowHeights(true);
  tree_->setIndentation(14);
  // Sizes and times are never cut; long names lose their middle, keeping the
  // "#3" that tells pass applications apart.
  tree_->setTextElideMode(Qt::ElideMiddle);
  tree_->header()->setStretchLastSection(false);
  tree_->header()->setMinimumSectionSize(24);
  tree_->header()->setSectionResizeMode(SessionModel::Name, QHeaderView::Stretch);
  tree_->header()->setSectionResizeMode(SessionModel::Detail, QHeaderView::ResizeToContents);
  tree_->header()->setSectionResizeMode(SessionModel::Time, QHeaderView::ResizeToContents);
  connect(tree_, &QTreeView::clicked, this, &Workbench::onTreeActivated);
  connect(tree_, &QTreeView::activated, this, &Workbench::onTreeActivated);
  QDockWidget* session = dock("Session", "session", tree_, Qt::LeftDockWidgetArea);

  source_ = new CodeEditor(this);
  // A side panel is narrower than a program's longest lines: wrap them rather than cut them.
  source_->setWrapLines(true);
  QDockWidget* source = dock("Source", "source", source_, Qt::RightDockWidgetArea);
  node_panel_ = new QTextBrowser(this);
  node_panel_->setOpenLinks(false);
  connect(node_panel_, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
    // stage:<index> links jump to a stage keeping the selection.
    if (url.scheme() == "stage") showStage(url.path().toInt());
  });
  dock("Node", "node", node_panel_, Qt::RightDockWidgetArea);

  QDockWidget* guards = dock("Guards and recompiles", "guards", buildGuardsPanel(), Qt::BottomDockWidgetArea);
  dock("Numerics", "numerics", buildNumericsPanel(), Qt::BottomDockWidgetArea);
  dock("Minifier", "minifier", buildMinifierPanel(), Qt::BottomDockWidgetArea);
  dock("Ranks and timeline", "trace", buildTracePanel(), Qt::BottomDockWidgetArea);
  corpus_ = new CorpusPanel(this);
  dock("Op corpus", "corpus", corpus_, Qt::BottomDockWidgetArea);
  log_ = new QPlainTextEdit(this);
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(20000);
  dock("Log", "log", log_, Qt::BottomDockWidgetArea);
  session_dock_ = session;
  source_dock_ = source;
  guards_dock_ = guards;
  arrangeDocks();
}

QDockWidget* Workbench::dockNamed(const QString& name) const {
  for (QDockWidget* d : docks_)
    if (d->objectName() == name) return d;
  return nullptr;
}

void Workbench::arrangeDocks() {
  // Tabs in the order the docks were made, the first of each group in front.
  for (const QStringList& tabs : {QStringList{"source", "node"},
                                  QStringList{"guards", "numerics", "minifier", "trace", "corpus", "log"}}) {
    for (int i = 1; i < tabs.size(); ++i) tabifyDockWidget(dockNamed(tabs[i - 1]), dockNamed(tabs[i]));
    dockNamed(tabs.front())->raise();
  }
  // The bottom panels span the whole width under the session tree and the graph.
  setCorner(Qt::BottomLeftCorner, Qt::BottomDockWidgetArea);
  setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
}

void Workbench::buildMenus() {
  QMenu* file = menuBar()->addMenu("&File");
  QAction* open_file = file->addAction("&Open...");
  open_file->setShortcut(QKeySequence::Open);
  connect(open_file, &QAction::triggered, this, [this] {
    QString path = QFileDialog::getOpenFileName(this, "Open a program, TORCH_TRACE log or repro", {},
                                                "Kiln inputs (*.py *.log *.txt);;All files (*)");
    if (!path.isEmpty()) this->open({path});
  });
  QAction* folder = file->addAction("Open &folder...");
  folder->setShortcut(QKeySequence("Ctrl+Shift+O"));
  connect(folder, &QAction::triggered, this, [this] {
    QString dir = QFileDialog::getExistingDirectory(this, "Open a TORCH_TRACE folder, TORCH_COMPILE_DEBUG folder or op corpus");
    if (!dir.isEmpty()) this->open({dir});
  });
  recent_menu_ = file->addMenu("Open &recent");
  refreshRecentMenu();
  file->addSeparator();
  QAction* quit = file->addAction("&Quit");
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);

  QMenu* stage = menuBar()->addMenu("&Stage");
  QAction* prev = stage->addAction("&Previous stage");
  prev->setShortcuts({QKeySequence("Alt+Left"), QKeySequence("[")});
  connect(prev, &QAction::triggered, this, [this] { stepStage(-1); });
  QAction* next = stage->addAction("&Next stage");
  next->setShortcuts({QKeySequence("Alt+Right"), QKeySequence("]")});
  connect(next, &QAction::triggered, this, [this] { stepStage(1); });
  QAction* changed = stage->addAction("&Changed only");
  changed->setCheckable(true);
  changed->setShortcut(QKeySequence("Ctrl+Shift+C"));
  connect(changed, &QAction::toggled, this, &Workbench::setChangedOnly);
  connect(changed_only_, &QCheckBox::toggled, changed, &QAction::setChecked);
  QAction* diff = stage->addAction("Show &diff");
  diff->setCheckable(true);
  diff->setShortcut(QKeySequence("Ctrl+D"));
  connect(diff, &QAction::toggled, this, &Workbench::setDiffMode);
  connect(diff_, &QCheckBox::toggled, diff, &QAction::setChecked);
  QAction* find = stage->addAction("&Find...");
  find->setShortcut(QKeySequence::Find);
  find->setToolTip("Find a node in the graph, or text in the code when the Code tab has the focus or is shown alone");
  connect(find, &QAction::triggered, this, [this] {
    // One shortcut, two searches: the code's when it is what the user looks at.
    const bool in_code = code_panel_->isVisible() &&
                         (centreTab() == "code" || code_panel_->isAncestorOf(QApplication::focusWidget()));
    if (in_code) {
      code_panel_->openFind();
    } else {
      find_->setFocus();
      find_->selectAll();
    }
  });
  QAction* compare = stage->addAction("C&ompare with previous stage");
  compare->setShortcut(QKeySequence("Ctrl+Shift+D"));
  compare->setToolTip("The stage and the one before it side by side (pick any other two in the Compare tab)");
  connect(compare, &QAction::triggered, this, &Workbench::compareWithPrevious);
  QAction* numerics = stage->addAction("&Measure numerics");
  numerics->setShortcut(QKeySequence("Ctrl+M"));
  connect(numerics, &QAction::triggered, this, &Workbench::measureNumerics);

  // As kiln-cli stages --partitioner; a session already open keeps its split.
  QMenu* split = stage->addMenu("&Partitioner (programs opened next)");
  partitioner_actions_ = new QActionGroup(this);
  for (const char* name : {"default", "min-cut"}) {
    QAction* a = split->addAction(name);
    a->setCheckable(true);
    a->setChecked(partitioner_ == name);
    a->setData(QString(name));
    partitioner_actions_->addAction(a);
  }
  connect(partitioner_actions_, &QActionGroup::triggered, this,
          [this](QAction* a) { setPartitioner(a->data().toString()); });

  QMenu* view = menuBar()->addMenu("&View");
  for (const auto& [label, tab, key] : {std::tuple{"&Graph", "graph", "Ctrl+1"}, std::tuple{"&Code", "code", "Ctrl+2"},
                                        std::tuple{"Co&mpare", "compare", "Ctrl+3"}}) {
    QAction* a = view->addAction(label);
    a->setShortcut(QKeySequence(key));
    connect(a, &QAction::triggered, this, [this, t = QString(tab)] { showCentre(t); });
  }
  QAction* beside = view->addAction("Code &beside graph");
  beside->setCheckable(true);
  beside->setShortcut(QKeySequence("Ctrl+Shift+B"));
  connect(beside, &QAction::toggled, this, &Workbench::setCodeBesideGraph);
  connect(beside_, &QCheckBox::toggled, beside, &QAction::setChecked);
  QAction* shapes = view->addAction("Tensor &shapes");
  shapes->setCheckable(true);
  shapes->setToolTip("Each edge's tensor shape (and dtype unless float32), where node text is readable");
  shapes->setChecked(QSettings().value("view/shapes", true).toBool());
  graph_->setShowShapes(shapes->isChecked());
  compare_->graphView(0)->setShowShapes(shapes->isChecked());
  compare_->graphView(1)->setShowShapes(shapes->isChecked());
  connect(shapes, &QAction::toggled, this, [this](bool on) {
    QSettings().setValue("view/shapes", on);
    graph_->setShowShapes(on);
    compare_->graphView(0)->setShowShapes(on);
    compare_->graphView(1)->setShowShapes(on);
  });
  view->addSeparator();
  for (QDockWidget* d : docks_) view->addAction(d->toggleViewAction());
  view->addSeparator();
  QAction* reset = view->addAction("&Reset layout");
  reset->setToolTip("Put every panel back in its place, shown, at its first size");
  connect(reset, &QAction::triggered, this, &Workbench::resetLayout);
}

void Workbench::setPartitioner(const QString& name) {
  partitioner_ = name;
  if (partitioner_actions_)
    for (QAction* a : partitioner_actions_->actions()) a->setChecked(a->data().toString() == name);
  status_->setText("Programs opened from now on split joint graphs with the " + name + " partitioner");
}

void Workbench::refreshRecentMenu() {
  recent_menu_->clear();
  QStringList recent = QSettings().value("recent").toStringList();
  for (const QString& path : recent) {
    QAction* a = recent_menu_->addAction(path);
    connect(a, &QAction::triggered, this, [this, path] { open({path}); });
  }
  recent_menu_->setEnabled(!recent.isEmpty());
}

void Workbench::addRecent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value("recent").toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue("recent", recent);
  refreshRecentMenu();
}

void Workbench::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void Workbench::dropEvent(QDropEvent* e) {
  QStringList paths;
  for (const QUrl& u : e->mimeData()->urls())
    if (u.isLocalFile()) paths << u.toLocalFile();
  if (!paths.isEmpty()) open(paths);
}

void Workbench::setPendingSelection(const QString& compileId, const QString& stage) {
  pending_compile_ = compileId;
  pending_stage_ = stage;
}

void Workbench::open(const QStringList& paths) {
  for (const QString& p : paths) openOne(QFileInfo(p).absoluteFilePath());
}

void Workbench::openOne(const QString& path) {
  if (QFileInfo(path).isDir() && QFileInfo::exists(path + "/ops.json")) {
    corpus_->openCorpus(path);
    showPanel("corpus");
    addRecent(path);
    updateBusy();
    return;
  }
  setBusy("opening " + QFileInfo(path).fileName(), 0);
  std::string p = path.toStdString();
  // A newer request for the same path replaces a queued one; Cancel stops them all.
  loader_->post("open:" + path, [this, p, path](JobContext& ctx) -> JobRunner::Done {
    if (!workspace_tried_) {
      workspace_tried_ = true;
      QString ws = workspace_path();
      if (!ws.isEmpty())
        if (auto w = Workspace::open(ws.toStdString())) workspace_ = std::move(*w);
    }
    LoadOptions o;
    o.cancel = ctx.cancel;
    o.progress = ctx.progress;
    o.workspace = workspace_.get();
    o.time_limit_s = program_time_limit_s_;
    o.allow_read = program_allow_read_;
    o.allow_write = program_allow_write_;
    o.partitioner = partitioner_.toStdString();
    o.kiln_stages = false;  // a dump shows first; addKilnStages follows
    o.source_ready = [this, path](const std::string& text) {
      QMetaObject::invokeMethod(this, [this, path, t = QString::fromStdString(text)] { showOpeningSource(path, t); }, Qt::QueuedConnection);
    };
    auto t0 = std::chrono::steady_clock::now();
    auto s = load_session(p, o);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!s) {
      QString msg = QString::fromStdString(s.status().to_string());
      return [this, path, msg] {
        last_error_ = msg;
        status_->setText("Could not open " + path + ": " + msg);
        log_->appendPlainText("error: " + msg);
        emit openFailed(path, msg);
      };
    }
    return [this, s = *s, path, secs] {
      onSessionLoaded(s, path, secs);
    };
  });
}

void Workbench::showOpeningSource(const QString& path, const QString& text) {
  if (!loader_->isIdle()) {
    source_->setCode(text, "python");
    source_shown_for_ = nullptr;  // the next updateSource puts a session's own source back
    opening_source_ = path;
  }
}

void Workbench::onSessionLoaded(std::shared_ptr<Session> s, const QString& path, double seconds) {
  if (opening_source_ == path) opening_source_.clear();
  last_open_seconds_ = seconds;
  // Opened again: the file may have changed, so its kept numerics go.
  std::erase_if(numerics_results_, [&](const auto& kv) { return kv.first.path == s->path; });
  int index = model_->addSession(s);
  addRecent(path);
  setWindowTitle("Kiln — " + QString::fromStdString(s->title));
  QString note = s->from_store ? " (index from the workspace)" : "";
  status_->setText(QString("Opened %1: %2 compile(s) in %3 s%4")
                       .arg(QString::fromStdString(s->title))
                       .arg(s->compiles.size())
                       .arg(seconds, 0, 'f', 2)
                       .arg(note));
  log_->appendPlainText(QString("== opened %1 in %2 s%3").arg(path).arg(seconds, 0, 'f', 3).arg(note));
  for (const std::string& d : s->diagnostics) log_->appendPlainText("diagnostic: " + QString::fromStdString(d));
  if (!s->program_output.empty()) log_->appendPlainText(QString::fromStdString(s->program_output).trimmed());
  expandSession(index);
  emit sessionOpened(index);
  // What to show first: the command line's choice, else the first compile with a graph.
  int compile = -1;
  if (!pending_compile_.isEmpty()) {
    const SessionCompile* c = s->find(pending_compile_.toStdString());
    if (c) compile = int(c - s->compiles.data());
    else log_->appendPlainText("no compile id " + pending_compile_ + " in " + path);
  }
  if (compile < 0)
    for (int i = 0; i < int(s->compiles.size()) && compile < 0; ++i)
      if (s->compiles[size_t(i)].stages.size() > 1) compile = i;
  if (compile < 0 && !s->compiles.empty()) compile = 0;
  // Kiln's stages of a dump come later: a --stage naming one waits for them.
  const bool kiln_later = s->kind == Session::Kind::Trace && pending_stage_.startsWith(QString::fromUtf8(kKilnStagePrefix.data(), kKilnStagePrefix.size()));
  pending_kiln_stage_ = kiln_later ? pending_stage_ : QString();
  if (compile >= 0) showCompile(index, compile, kiln_later ? QString() : pending_stage_);
  pending_compile_.clear();
  pending_stage_.clear();
  if (s->kind == Session::Kind::Trace && s->trace) {
    addKilnStages(s, path);
    loadTraceViews(s);
  }
  updateBusy();
}

void Workbench::expandSession(int index) {
  // Frame rows say everything in their name: they span the columns.
  for (int e = 0; e < model_->rowCount(); ++e) {
    QModelIndex entry = model_->index(e, 0);
    for (int r = 0; r < model_->rowCount(entry); ++r) tree_->setFirstColumnSpanned(r, entry, true);
  }
  tree_->expand(model_->index(index, 0));
  for (int r = 0; r < model_->rowCount(model_->index(index, 0)); ++r) tree_->expand(model_->index(r, 0, model_->index(index, 0)));
}

void Workbench::addKilnStages(std::shared_ptr<const Session> s, const QString& path) {
  const std::string partitioner = partitioner_.toStdString();
  loader_->post("kiln:" + path, [this, s, partitioner](JobContext& ctx) -> JobRunner::Done {
    LoadOptions o;
    o.cancel = ctx.cancel;
    o.progress = ctx.progress;
    o.partitioner = partitioner;
    auto t0 = std::chrono::steady_clock::now();
    auto with = with_kiln_stages(*s, o);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!with) {
      QString msg = QString::fromStdString(with.status().to_string());
      return [this, msg] { log_->appendPlainText("Kiln's pipeline on the dump: " + msg); };
    }
    return [this, with = *with, s, secs] { onKilnStagesAdded(with, s, secs); };
  });
}

void Workbench::onKilnStagesAdded(std::shared_ptr<Session> with, const std::shared_ptr<const Session>& without, double seconds) {
  // Only onto the session it was made from: not one closed or reopened meanwhile.
  int index = -1;
  for (int i = 0; i < model_->sessionCount(); ++i)
    if (model_->session(i) == without) index = i;
  if (index < 0) return;
  // The dump's stages keep their indices, so the selection and the graph shown stay.
  model_->addSession(with);
  expandSession(index);
  log_->appendPlainText(QString("== Kiln's pipeline on %1 in %2 s").arg(QString::fromStdString(with->title)).arg(seconds, 0, 'f', 3));
  for (size_t d = without->diagnostics.size(); d < with->diagnostics.size(); ++d)
    log_->appendPlainText("diagnostic: " + QString::fromStdString(with->diagnostics[d]));
  if (session_ == index) {
    fillCodeCombo();
    updateStepper();
    if (!pending_kiln_stage_.isEmpty() && compile_ >= 0) showCompile(index, compile_, pending_kiln_stage_);
  }
  pending_kiln_stage_.clear();
  emit kilnStagesAdded(index);
  updateBusy();
}

void Workbench::setBusy(const QString& what, double fraction) {
  progress_->setValue(int(fraction * 1000));
  progress_->show();
  cancel_->show();
  if (!what.isEmpty()) status_->setText(what);
}

void Workbench::updateBusy() {
  bool busy = !loader_->isIdle() || !numerics_runner_->isIdle() || corpus_->isBusy();
  progress_->setVisible(busy);
  cancel_->setVisible(busy);
}

bool Workbench::showPanel(const QString& name) {
  // The graph, the code and the compare view are the centre's tabs, not docks.
  if (name == "graph" || name == "code" || name == "compare" || name == "graph+code") return showCentre(name);
  // "ranks" and "timeline" are the two tabs of the "trace" panel.
  const QString dock_name = name == "ranks" || name == "timeline" ? QString("trace") : name;
  if (name == "ranks" || name == "timeline") trace_panel_->setCurrentIndex(name == "ranks" ? 0 : 1);
  for (QDockWidget* d : docks_)
    if (d->objectName() == dock_name) {
      d->show();
      d->raise();
      return true;
    }
  return false;
}

QString Workbench::busyReason() const {
  QStringList r;
  if (!loader_->isIdle()) r << "opening";
  if (!viewer_->isIdle()) r << "loading a stage";
  if (!numerics_runner_->isIdle()) r << "numerics";
  if (!trace_runner_->isIdle()) r << "ranks and timeline";
  if (corpus_->isBusy()) r << "op corpus";
  if (minifier_->isRunning()) r << "minifier";
  if (shown_graph_ && !graph_->isLayoutReady()) r << "graph layout";
  if (compare_->isBusy()) r << "compare";
  return r.join(", ");
}

bool Workbench::isSettled() const {
  if (!loader_->isIdle() || !viewer_->isIdle() || !numerics_runner_->isIdle() || !trace_runner_->isIdle()) return false;
  if (corpus_->isBusy() || minifier_->isRunning()) return false;
  if (shown_graph_ && !graph_->isLayoutReady()) return false;
  if (compare_->isBusy()) return false;
  return true;
}

void Workbench::whenSettled(std::function<void(bool)> fn, int timeout_ms) {
  auto* timer = new QTimer(this);
  auto start = std::chrono::steady_clock::now();
  auto settled_since = std::make_shared<int>(0);
  connect(timer, &QTimer::timeout, this, [this, timer, fn, start, timeout_ms, settled_since] {
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    // Settled for a few ticks in a row: queued results and the first paint have gone through.
    *settled_since = isSettled() ? *settled_since + 1 : 0;
    bool timed_out = ms > timeout_ms;
    if (*settled_since >= 3 || timed_out) {
      timer->stop();
      timer->deleteLater();
      fn(timed_out);
    }
  });
  timer->start(50);
}

}  // namespace kiln::viewer

namespace kiln::viewer {
double Workbench::now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace kiln::viewer
