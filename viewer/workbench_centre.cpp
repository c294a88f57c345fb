// The centre of the workbench below the stage stepper: tabs for the graph,
// the generated code (which can also stand beside the graph, so a node's
// kernel lines and a line's nodes are seen together) and compare mode.
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabBar>
#include <QTimer>
#include <QVBoxLayout>

#include "viewer/code_editor.h"
#include "viewer/code_view.h"
#include "viewer/compare_view.h"
#include "viewer/graph_view.h"
#include "viewer/session_model.h"
#include "viewer/workbench.h"

namespace kiln::viewer {

namespace {
enum CentreTab { kGraphTab = 0, kCodeTab = 1, kCompareTab = 2 };
}  // namespace

QWidget* Workbench::buildCentre(QWidget* graph_page) {
  auto* centre = new QWidget(this);
  auto* layout = new QVBoxLayout(centre);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  auto* tabs_row = new QHBoxLayout;
  tabs_row->setContentsMargins(4, 0, 6, 0);
  centre_tabs_ = new QTabBar(centre);
  centre_tabs_->setObjectName("centre_tabs");
  centre_tabs_->setDocumentMode(true);
  centre_tabs_->setExpanding(false);
  centre_tabs_->addTab("Graph");
  centre_tabs_->addTab("Code");
  centre_tabs_->addTab("Compare");
  centre_tabs_->setTabToolTip(kGraphTab, "The graph of the stage");
  centre_tabs_->setTabToolTip(kCodeTab, "The generated code of the compile, with search (Ctrl+F)");
  centre_tabs_->setTabToolTip(kCompareTab, "Any two stages or sessions side by side: matched nodes and a text diff");
  beside_ = new QCheckBox("Code beside graph", centre);
  beside_->setToolTip("Show the graph and the code side by side: a node's kernel lines and a line's nodes at once");
  tabs_row->addWidget(centre_tabs_);
  tabs_row->addStretch(1);
  tabs_row->addWidget(beside_);
  layout->addLayout(tabs_row);

  centre_stack_ = new QStackedWidget(centre);
  centre_split_ = new QSplitter(Qt::Horizontal, centre_stack_);
  centre_split_->setChildrenCollapsible(false);
  graph_page->setParent(centre_split_);
  centre_split_->addWidget(graph_page);
  code_panel_ = new CodeView(centre_split_);
  code_ = code_panel_->editor();
  code_combo_ = new QComboBox(code_panel_);
  code_combo_->setObjectName("code_stage");
  code_combo_->setToolTip("The compile's generated code: Inductor's output code, Kiln's loop IR, LLVM IR, assembly or CUDA C++");
  code_combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  code_combo_->setMinimumContentsLength(10);
  code_panel_->bar()->addWidget(code_combo_, 1);
  centre_split_->addWidget(code_panel_);
  centre_stack_->addWidget(centre_split_);
  compare_ = new CompareView(model_, centre_stack_);
  centre_stack_->addWidget(compare_);
  layout->addWidget(centre_stack_, 1);
  code_panel_->hide();

  connect(code_, &CodeEditor::lineClicked, this, &Workbench::onCodeLineClicked);
  connect(code_combo_, &QComboBox::activated, this, [this](int i) {
    if (!updating_) showCodeStage(code_combo_->itemData(i).toInt());
  });
  connect(centre_tabs_, &QTabBar::currentChanged, this, &Workbench::onCentreTab);
  connect(beside_, &QCheckBox::toggled, this, [this](bool on) {
    onCentreTab(centre_tabs_->currentIndex());
    // Hidden, the code had no share of the splitter: the graph gets a little less than half,
    // once the splitter has taken in the newly shown side (it does so on its next layout).
    if (on)
      QTimer::singleShot(0, this, [this] {
        const int w = std::max(centre_split_->width(), 200);
        centre_split_->setSizes({w * 9 / 20, w - w * 9 / 20});
        // The graph is narrower now: its selection back in view.
        if (!graph_->selectedNodes().empty()) graph_->selectNodes(graph_->selectedNodes());
      });
  });
  connect(model_, &QAbstractItemModel::rowsInserted, compare_, &CompareView::refreshSessions);
  connect(model_, &QAbstractItemModel::modelReset, compare_, &CompareView::refreshSessions);
  return centre;
}

void Workbench::onCentreTab(int index) {
  const bool beside = beside_->isChecked();
  centre_stack_->setCurrentIndex(index == kCompareTab ? 1 : 0);
  if (index == kCompareTab) return;
  graph_->setVisible(beside || index == kGraphTab);
  code_panel_->setVisible(beside || index == kCodeTab);
}

bool Workbench::showCentre(const QString& tab) {
  if (tab == "graph+code") {
    setCodeBesideGraph(true);
    return showCentre("code");
  }
  const int index = tab == "graph" ? kGraphTab : tab == "code" ? kCodeTab : tab == "compare" ? kCompareTab : -1;
  if (index < 0) return false;
  if (centre_tabs_->currentIndex() == index) onCentreTab(index);
  else centre_tabs_->setCurrentIndex(index);
  return true;
}

QString Workbench::centreTab() const {
  switch (centre_tabs_->currentIndex()) {
    case kCodeTab: return "code";
    case kCompareTab: return "compare";
    default: return "graph";
  }
}

void Workbench::setCodeBesideGraph(bool on) { beside_->setChecked(on); }
bool Workbench::codeBesideGraph() const { return beside_->isChecked(); }

std::optional<std::array<int, 3>> Workbench::parseStageSpec(const QString& spec) {
  QString rest = spec.trimmed();
  int session = session_;
  if (rest.startsWith('#')) {
    const qsizetype colon = rest.indexOf(':');
    bool ok = false;
    const int n = rest.mid(1, colon < 0 ? -1 : colon - 1).toInt(&ok);
    if (!ok || colon < 0 || n < 1 || n > model_->sessionCount()) return std::nullopt;
    session = n - 1;
    rest = rest.mid(colon + 1);
  }
  if (session < 0 || session >= model_->sessionCount()) return std::nullopt;
  auto s = model_->session(session);
  auto find_stage = [](const SessionCompile& c, const std::string& name) {
    int i = c.stage_index(name);
    for (int k = 0; k < int(c.stages.size()) && i < 0; ++k)
      if (c.stages[size_t(k)].pass == name) i = k;
    return i;
  };
  // The compile left out: the one shown, or the same id in another session, or its first with stages.
  int compile = -1;
  if (session == session_) compile = compile_;
  if (compile < 0 && currentCompile())
    if (const SessionCompile* c = s->find(currentCompile()->id)) compile = int(c - s->compiles.data());
  for (int i = 0; i < int(s->compiles.size()) && compile < 0; ++i)
    if (s->compiles[size_t(i)].stages.size() > 1) compile = i;
  if (compile < 0 && !s->compiles.empty()) compile = 0;  // a repro: one compile of one stage
  if (compile >= 0) {
    const int stage = find_stage(s->compiles[size_t(compile)], rest.toStdString());
    if (stage >= 0) return std::array<int, 3>{session, compile, stage};
  }
  // COMPILE:STAGE; compile ids may hold a colon themselves ("r1:0/0").
  for (qsizetype colon = rest.indexOf(':'); colon >= 0; colon = rest.indexOf(':', colon + 1)) {
    const SessionCompile* c = s->find(rest.left(colon).toStdString());
    if (!c) continue;
    const int stage = find_stage(*c, rest.mid(colon + 1).toStdString());
    if (stage >= 0) return std::array<int, 3>{session, int(c - s->compiles.data()), stage};
  }
  return std::nullopt;
}

bool Workbench::compare(const QString& left, const QString& right) {
  auto a = parseStageSpec(left);
  auto b = parseStageSpec(right);
  if (!a || !b) {
    last_error_ = "no stage " + (a ? right : left) + " to compare";
    status_->setText(last_error_);
    log_->appendPlainText(last_error_);
    return false;
  }
  compare_->setSides({(*a)[0], (*a)[1], (*a)[2]}, {(*b)[0], (*b)[1], (*b)[2]});
  showCentre("compare");
  return true;
}

void Workbench::compareWithPrevious() {
  const SessionCompile* c = currentCompile();
  if (!c || stage_ < 0) {
    status_->setText("Open a session and pick a stage to compare");
    showCentre("compare");
    return;
  }
  int other = stage_ > 0 ? stage_ - 1 : std::min(int(c->stages.size()) - 1, stage_ + 1);
  // The stage before of the same kind: a graph against a graph, code against code.
  for (int k = stage_ - 1; k >= 0; --k)
    if (c->stages[size_t(k)].kind == c->stages[size_t(stage_)].kind && c->stages[size_t(k)].changed) {
      other = k;
      break;
    }
  compare_->setSides({session_, compile_, std::min(other, stage_)}, {session_, compile_, std::max(other, stage_)});
  showCentre("compare");
}

}  // namespace kiln::viewer
