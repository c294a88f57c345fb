#include "viewer/compare_view.h"

#include <QAbstractItemView>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QRegularExpression>
#include <QScrollBar>
#include <QSplitter>
#include <QStyle>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

#include "core/graph/printer.h"
#include "viewer/code_editor.h"
#include "viewer/graph_view.h"
#include "viewer/job_runner.h"
#include "viewer/session_model.h"

namespace kiln::viewer {

using namespace kiln::session;

namespace {
const QColor kAdded(40, 170, 70), kRewritten(230, 140, 0), kRemoved(210, 50, 50), kFiller(200, 200, 200);
}  // namespace

// Both sides as read on the worker.
struct CompareView::Loaded {
  Side sides[2];
  std::shared_ptr<const Graph> graphs[2];
  std::string texts[2];
  QString languages[2], titles[2], errors[2];
  std::optional<StageDiff> diff;
  TextDiff text_diff;
  std::vector<NodeId> left_rewritten;  // the rewritten nodes' namesakes on the left
};

CompareView::CompareView(SessionModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  runner_ = new JobRunner(this);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 2, 4, 2);
  layout->setSpacing(2);
  auto* bar = new QHBoxLayout;
  for (int i = 0; i < 2; ++i) {
    sessions_[i] = new QComboBox(this);
    compiles_[i] = new QComboBox(this);
    stages_[i] = new QComboBox(this);
    sessions_[i]->setToolTip(i == 0 ? "Left: the session" : "Right: the session");
    compiles_[i]->setToolTip("The compile");
    stages_[i]->setToolTip("The stage");
    for (QComboBox* c : {sessions_[i], compiles_[i], stages_[i]}) {
      c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
      c->setMinimumContentsLength(3);
    }
    stages_[i]->setMinimumContentsLength(8);
    stages_[i]->view()->setMinimumWidth(320);
    bar->addWidget(sessions_[i], 2);
    bar->addWidget(compiles_[i], 1);
    bar->addWidget(stages_[i], 3);
    connect(sessions_[i], &QComboBox::activated, this, [this, i] {
      if (updating_) return;
      sides_[i].session = sessions_[i]->currentIndex();
      sides_[i].compile = 0;
      sides_[i].stage = -1;
      fillPickers(i);
      onPicked(i);
    });
    connect(compiles_[i], &QComboBox::activated, this, [this, i] {
      if (updating_) return;
      sides_[i].compile = compiles_[i]->currentIndex();
      sides_[i].stage = -1;
      fillPickers(i);
      onPicked(i);
    });
    connect(stages_[i], &QComboBox::activated, this, [this, i] { if (!updating_) onPicked(i); });
    if (i == 0) {
      swap_ = new QToolButton(this);
      swap_->setText("\u21c4");
      swap_->setToolTip("Swap the two sides");
      bar->addWidget(swap_);
      connect(swap_, &QToolButton::clicked, this, &CompareView::swapSides);
    }
  }
  layout->addLayout(bar);
  summary_label_ = new QLabel(this);
  summary_label_->setObjectName("compare_summary");
  summary_label_->setTextFormat(Qt::RichText);
  summary_label_->setWordWrap(true);
  summary_label_->setContentsMargins(4, 0, 4, 0);
  layout->addWidget(summary_label_);

  body_ = new QSplitter(Qt::Vertical, this);
  graph_pane_ = new QSplitter(Qt::Horizontal, body_);
  auto* text_pane = new QSplitter(Qt::Horizontal, body_);
  for (int i = 0; i < 2; ++i) {
    graphs_[i] = new GraphView(graph_pane_);
    connect(graphs_[i], &GraphView::nodeClicked, this, [this, i](NodeId id) { onNodeClicked(i, id); });
    auto* box = new QWidget(text_pane);
    auto* v = new QVBoxLayout(box);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(0);
    text_titles_[i] = new QLabel(box);
    text_titles_[i]->setContentsMargins(4, 2, 4, 2);
    texts_[i] = new CodeEditor(box);
    v->addWidget(text_titles_[i]);
    v->addWidget(texts_[i], 1);
  }
  // The two texts scroll together: their rows are aligned (fillers stand for the other side's extra lines).
  for (int i = 0; i < 2; ++i) {
    CodeEditor* from = texts_[i];
    CodeEditor* to = texts_[1 - i];
    for (Qt::Orientation o : {Qt::Vertical, Qt::Horizontal}) {
      QScrollBar* a = o == Qt::Vertical ? from->verticalScrollBar() : from->horizontalScrollBar();
      QScrollBar* b = o == Qt::Vertical ? to->verticalScrollBar() : to->horizontalScrollBar();
      connect(a, &QScrollBar::valueChanged, this, [this, b](int v) {
        if (syncing_) return;
        syncing_ = true;
        b->setValue(v);
        syncing_ = false;
      });
    }
  }
  body_->addWidget(graph_pane_);
  body_->addWidget(text_pane);
  body_->setStretchFactor(0, 3);
  body_->setStretchFactor(1, 2);
  layout->addWidget(body_, 1);
  // A narrow window squeezes the pickers rather than pushing the docks aside.
  setMinimumWidth(300);
  summary_label_->setText("<span style='color:gray'>Pick two stages: of one compile, of two compiles or of two open sessions "
                          "(Stage &gt; Compare with previous, or <code>kiln --compare A B</code>).</span>");
}

CompareView::~CompareView() { runner_->stop(); }

void CompareView::stop() { runner_->stop(); }

bool CompareView::isBusy() const {
  if (!runner_->isIdle()) return true;
  for (GraphView* g : graphs_)
    if (g->graph() && !g->isLayoutReady()) return true;
  return false;
}

void CompareView::refreshSessions() {
  for (int i = 0; i < 2; ++i) fillPickers(i);
}

void CompareView::fillPickers(int i) {
  updating_ = true;
  Side& s = sides_[i];
  sessions_[i]->clear();
  for (int k = 0; k < model_->sessionCount(); ++k)
    sessions_[i]->addItem(QString("#%1 %2").arg(k + 1).arg(QString::fromStdString(model_->session(k)->title)));
  compiles_[i]->clear();
  stages_[i]->clear();
  if (s.session >= 0 && s.session < model_->sessionCount()) {
    sessions_[i]->setCurrentIndex(s.session);
    auto session = model_->session(s.session);
    for (const SessionCompile& c : session->compiles) compiles_[i]->addItem(QString::fromStdString(c.id));
    if (s.compile >= 0 && s.compile < int(session->compiles.size())) {
      compiles_[i]->setCurrentIndex(s.compile);
      const SessionCompile& c = session->compiles[size_t(s.compile)];
      for (const SessionStage& st : c.stages) {
        const QString name = QString::fromStdString(st.name);
        if (st.kind == StageKind::Code) stages_[i]->addItem(style()->standardIcon(QStyle::SP_FileIcon), name);
        else stages_[i]->addItem(name);
      }
      if (s.stage >= 0 && s.stage < int(c.stages.size())) stages_[i]->setCurrentIndex(s.stage);
    }
  }
  updating_ = false;
}

void CompareView::onPicked(int i) {
  sides_[i].stage = stages_[i]->currentIndex();
  load();
}

void CompareView::setSides(Side left, Side right) {
  sides_[0] = left;
  sides_[1] = right;
  refreshSessions();
  load();
}

void CompareView::swapSides() { setSides(sides_[1], sides_[0]); }

void CompareView::load() {
  std::shared_ptr<const Session> sessions[2];
  for (int i = 0; i < 2; ++i) {
    const Side& s = sides_[i];
    if (s.session < 0 || s.session >= model_->sessionCount()) return;
    sessions[i] = model_->session(s.session);
    if (s.compile < 0 || s.compile >= int(sessions[i]->compiles.size())) return;
    if (s.stage < 0 || s.stage >= int(sessions[i]->compiles[size_t(s.compile)].stages.size())) return;
  }
  summary_label_->setText("Comparing...");
  const Side a = sides_[0], b = sides_[1];
  runner_->post("compare", [this, sessions0 = sessions[0], sessions1 = sessions[1], a, b](JobContext& ctx) -> JobRunner::Done {
    auto r = std::make_shared<Loaded>();
    r->sides[0] = a;
    r->sides[1] = b;
    const std::shared_ptr<const Session> ss[2] = {sessions0, sessions1};
    for (int i = 0; i < 2 && !ctx.cancelled(); ++i) {
      const SessionCompile& c = ss[i]->compiles[size_t(r->sides[i].compile)];
      const SessionStage& st = c.stages[size_t(r->sides[i].stage)];
      r->titles[i] = QString("#%1 %2 [%3] %4")
                         .arg(r->sides[i].session + 1)
                         .arg(QString::fromStdString(ss[i]->title), QString::fromStdString(c.id), QString::fromStdString(st.name));
      if (st.kind == StageKind::Code) {
        r->texts[i] = st.text;
        r->languages[i] = QString::fromStdString(st.language);
        continue;
      }
      auto g = stage_graph(*ss[i], c, st);
      if (!g) {
        r->errors[i] = QString::fromStdString(g.status().to_string());
        continue;
      }
      r->graphs[i] = *g;
      r->texts[i] = print_graph_module(**g);
      r->languages[i] = "python";
    }
    if (ctx.cancelled()) return {};
    if (r->graphs[0] && r->graphs[1]) {
      r->diff = diff_graphs(*r->graphs[0], *r->graphs[1]);
      for (NodeId id : r->diff->rewritten)
        if (NodeId l = r->graphs[0]->find((*r->graphs[1])[id].name); l != kNoNode) r->left_rewritten.push_back(l);
    }
    r->text_diff = diff_lines(r->texts[0], r->texts[1]);
    return [this, r] { show(r); };
  });
}

void CompareView::show(const std::shared_ptr<const Loaded>& r) {
  if (!(r->sides[0] == sides_[0] && r->sides[1] == sides_[1])) return;  // the pickers have moved on
  shown_ = r;
  diff_ = r->diff;
  text_diff_ = r->text_diff;
  const bool graphs = r->graphs[0] || r->graphs[1];
  const bool graphs_were_hidden = graph_pane_->isHidden() || !graphs_sized_;
  graph_pane_->setVisible(graphs);
  // The graphs come back at their share (three fifths) after a comparison of code hid them.
  if (graphs && graphs_were_hidden)
    QTimer::singleShot(0, this, [this] {
      const int h = std::max(body_->height(), 100);
      body_->setSizes({h * 3 / 5, h - h * 3 / 5});
      graphs_sized_ = body_->isVisible();
    });
  for (int i = 0; i < 2; ++i) {
    graphs_[i]->setGraph(nullptr);
    graphs_[i]->setGraph(r->graphs[i]);
    graphs_[i]->clearMarks();
  }
  matched_ = 0;
  if (r->diff) {
    graphs_[0]->markNodes(r->diff->removed, kRemoved);
    graphs_[0]->markNodes(r->left_rewritten, kRewritten);
    graphs_[1]->markNodes(r->diff->added, kAdded);
    graphs_[1]->markNodes(r->diff->rewritten, kRewritten);
    matched_ = int(r->graphs[1]->size() - r->diff->added.size());
  }
  // The text diff: rows aligned, a filler line where one side has none.
  const std::vector<std::string_view> lines[2] = {text_lines(r->texts[0]), text_lines(r->texts[1])};
  for (int i = 0; i < 2; ++i) {
    QStringList out;
    std::vector<int> numbers;
    for (const DiffRow& row : r->text_diff.rows) {
      const int n = i == 0 ? row.left : row.right;
      numbers.push_back(n);
      out << (n ? QString::fromUtf8(lines[i][size_t(n - 1)].data(), qsizetype(lines[i][size_t(n - 1)].size())) : QString());
    }
    texts_[i]->setCode(out.join('\n'), r->languages[i]);
    texts_[i]->setLineNumbers(numbers);
    for (const DiffRow& row : r->text_diff.rows) {
      const int n = i == 0 ? row.left : row.right;
      if (row.kind == DiffRowKind::Same) continue;
      if (!n) continue;
      const QColor c = row.kind == DiffRowKind::Changed ? kRewritten : i == 0 ? kRemoved : kAdded;
      texts_[i]->markLine(n, c, row.kind == DiffRowKind::Changed ? "changed" : i == 0 ? "only on the left" : "only on the right");
    }
    text_titles_[i]->setText(r->errors[i].isEmpty() ? r->titles[i] : r->titles[i] + ": " + r->errors[i]);
  }
  // The first difference in view.
  for (const DiffRow& row : r->text_diff.rows)
    if (row.kind != DiffRowKind::Same) {
      if (row.left) texts_[0]->goToLine(row.left);
      else texts_[1]->goToLine(row.right);
      break;
    }
  QString s;
  if (r->diff)
    s = QString("<b>Graphs</b>: %1 nodes matched by name &middot; <span style='color:%2'>+%3 added</span> &middot; "
                "<span style='color:%4'>~%5 rewritten</span> &middot; <span style='color:%6'>&minus;%7 removed</span>"
                " &nbsp;&nbsp; ")
            .arg(matched_)
            .arg(kAdded.name()).arg(r->diff->added.size())
            .arg(kRewritten.name()).arg(r->diff->rewritten.size())
            .arg(kRemoved.name()).arg(r->diff->removed.size());
  const TextDiff& d = r->text_diff;
  s += d.identical() ? QString("<b>Text</b>: identical (%1 lines)").arg(lines[0].size())
                     : QString("<b>Text</b>: %1 changed, %2 removed, %3 added lines (of %4 and %5)")
                           .arg(d.changed).arg(d.removed).arg(d.added).arg(lines[0].size()).arg(lines[1].size());
  summary_ = QString(s).remove(QRegularExpression("<[^>]*>")).replace("&middot;", "·").replace("&minus;", "-").replace("&nbsp;", " ");
  summary_label_->setText(s);
  emit compared();
}

std::vector<NodeId> CompareView::matchesOf(int side, NodeId id) const {
  std::vector<NodeId> out;
  const auto& from = graphs_[side]->graph();
  const auto& to = graphs_[1 - side]->graph();
  if (!from || !to || id < 0 || id >= NodeId(from->size())) return out;
  const Node& n = (*from)[id];
  if (NodeId same = to->find(n.name); same != kNoNode) return {same};
  // Provenance: what this node was made from, or what was made from it.
  for (const std::string& f : n.meta.from)
    if (NodeId m = to->find(f); m != kNoNode) out.push_back(m);
  for (NodeId k = 0; k < NodeId(to->size()); ++k) {
    const auto& from_names = (*to)[k].meta.from;
    if (std::find(from_names.begin(), from_names.end(), n.name) != from_names.end()) out.push_back(k);
  }
  return out;
}

void CompareView::onNodeClicked(int side, NodeId id) {
  graphs_[side]->selectNodes({id});
  graphs_[1 - side]->selectNodes(matchesOf(side, id));
}

std::vector<std::string> CompareView::selectNode(int side, const std::string& name) {
  std::vector<std::string> out;
  const auto& g = graphs_[side]->graph();
  if (!g) return out;
  NodeId id = g->find(name);
  if (id == kNoNode) return out;
  onNodeClicked(side, id);
  for (NodeId m : matchesOf(side, id)) out.push_back((*graphs_[1 - side]->graph())[m].name);
  return out;
}

}  // namespace kiln::viewer
