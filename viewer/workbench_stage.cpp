// The middle of the workbench: which compile and stage are shown, the stage
// stepper, the graph, and node selection carried across stages by provenance.
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QTableView>
#include <QTextBrowser>
#include <QToolButton>
#include <QAbstractItemView>
#include <QStyle>
#include <QTreeView>
#include <QVBoxLayout>

#include <chrono>

#include "core/graph/printer.h"
#include "viewer/code_editor.h"
#include "viewer/graph_view.h"
#include "viewer/job_runner.h"
#include "viewer/minifier_panel.h"
#include "viewer/numerics_model.h"
#include "viewer/session_model.h"
#include "session/source_links.h"
#include "session/stage_links.h"
#include "viewer/workbench.h"

namespace kiln::viewer {

namespace {

const QColor kAdded(40, 170, 70), kRewritten(230, 140, 0), kRemoved(210, 50, 50);

QString seconds_text(double s) {
  return s < 1 ? QString("%1 ms").arg(s * 1e3, 0, 'f', s < 0.01 ? 3 : 1) : QString("%1 s").arg(s, 0, 'f', 2);
}

QString html(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }

}  // namespace

QWidget* Workbench::buildStagePanel() {
  auto* panel = new QWidget(this);
  auto* layout = new QVBoxLayout(panel);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(6, 4, 6, 0);
  prev_ = new QToolButton(panel);
  prev_->setArrowType(Qt::LeftArrow);
  prev_->setToolTip("Previous stage (Alt+Left or [)");
  next_ = new QToolButton(panel);
  next_->setArrowType(Qt::RightArrow);
  next_->setToolTip("Next stage (Alt+Right or ])");
  stage_combo_ = new QComboBox(panel);
  stage_combo_->setMinimumWidth(200);
  stage_combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  stage_combo_->setMinimumContentsLength(18);
  // Its list is as wide as the longest stage name, even when the box is not.
  stage_combo_->view()->setMinimumWidth(360);
  changed_only_ = new QCheckBox("Changed only", panel);
  changed_only_->setToolTip("Skip the passes that left the graph unchanged");
  diff_ = new QCheckBox("Diff", panel);
  diff_->setToolTip("Mark what the pass changed: added (green), rewritten (orange); removed nodes are listed");
  colour_mode_ = new QComboBox(panel);
  colour_mode_->setObjectName("colour_mode");
  colour_mode_->addItems({"Op kind", "Fusion group", "Numerics"});
  colour_mode_->setToolTip("Colour the nodes by op kind, by fusion group, or by their error against float64 eager");
  find_ = new QLineEdit(panel);
  find_->setPlaceholderText("Find node (Ctrl+F)");
  find_->setToolTip("Find a node by name, op or op kind; Enter finds the next");
  find_->setClearButtonEnabled(true);
  find_->setMaximumWidth(180);
  auto* compare = new QToolButton(panel);
  compare->setText("Compare");
  compare->setToolTip("This stage and the one before it side by side, or any two stages or sessions (Ctrl+Shift+D)");
  connect(compare, &QToolButton::clicked, this, &Workbench::compareWithPrevious);
  auto* fit = new QToolButton(panel);
  fit->setText("Fit");
  fit->setToolTip("Fit the graph to the view");
  bar->addWidget(prev_);
  bar->addWidget(stage_combo_, 1);
  bar->addWidget(next_);
  bar->addSpacing(8);
  bar->addWidget(changed_only_);
  bar->addWidget(diff_);
  bar->addSpacing(8);
  auto* colour = new QLabel("Colour", panel);
  colour->setBuddy(colour_mode_);
  bar->addWidget(colour);
  bar->addWidget(colour_mode_);
  bar->addWidget(find_);
  bar->addWidget(fit);
  bar->addWidget(compare);
  layout->addLayout(bar);
  stage_info_ = new QLabel(panel);
  stage_info_->setContentsMargins(8, 0, 8, 2);
  stage_info_->setTextFormat(Qt::RichText);
  stage_info_->setWordWrap(true);
  layout->addWidget(stage_info_);
  graph_ = new GraphView(panel);
  layout->addWidget(buildCentre(graph_), 1);

  connect(prev_, &QToolButton::clicked, this, [this] { stepStage(-1); });
  connect(next_, &QToolButton::clicked, this, [this] { stepStage(1); });
  connect(stage_combo_, &QComboBox::activated, this, [this](int i) {
    if (!updating_) showStage(stage_combo_->itemData(i).toInt());
  });
  connect(changed_only_, &QCheckBox::toggled, this, [this](bool) { updateStepper(); });
  connect(diff_, &QCheckBox::toggled, this, [this](bool) {
    if (!updating_ && stage_ >= 0) showStage(stage_);
  });
  connect(colour_mode_, &QComboBox::currentIndexChanged, this, [this](int i) {
    // The workbench sets the mode with signals blocked; this is the user's pick.
    if (i != 2) user_colour_mode_ = i;
    graph_->setColorMode(i == 0 ? GraphColorMode::OpKind : i == 1 ? GraphColorMode::FusionGroup : GraphColorMode::Numerics);
  });
  connect(find_, &QLineEdit::returnPressed, this, [this] {
    if (!graph_->find(find_->text())) status_->setText("No node matches " + find_->text());
  });
  connect(fit, &QToolButton::clicked, graph_, &GraphView::fitToView);
  connect(graph_, &GraphView::nodeClicked, this, &Workbench::onNodeClicked);
  connect(graph_, &GraphView::layoutReady, this, [this] {
    if (stage_requested_at_ > 0) {
      last_stage_seconds_ = seconds_since(stage_requested_at_);
      stage_requested_at_ = 0;
    }
  });
  return panel;
}

std::shared_ptr<const Session> Workbench::currentSession() const {
  return session_ >= 0 && session_ < model_->sessionCount() ? model_->session(session_) : nullptr;
}

const SessionCompile* Workbench::currentCompile() const {
  auto s = currentSession();
  if (!s || compile_ < 0 || compile_ >= int(s->compiles.size())) return nullptr;
  return &s->compiles[size_t(compile_)];
}

const SessionStage* Workbench::currentStage() const {
  const SessionCompile* c = currentCompile();
  if (!c || stage_ < 0 || stage_ >= int(c->stages.size())) return nullptr;
  return &c->stages[size_t(stage_)];
}

QString Workbench::stageInfoText() const { return stage_info_text_; }

void Workbench::onTreeActivated(const QModelIndex& index) {
  SessionModel::Ref r = model_->ref(index);
  if (r.session < 0) return;
  if (r.level == SessionModel::Level::Stage) {
    if (r.session != session_ || r.compile != compile_) showCompile(r.session, r.compile);
    showStage(r.stage);
  } else if (r.level == SessionModel::Level::Compile) {
    showCompile(r.session, r.compile);
  }
}

bool Workbench::selectCompile(const QString& id) {
  int si = model_->sessionCount() - 1;
  if (si < 0) return false;
  const SessionCompile* c = model_->session(si)->find(id.toStdString());
  if (!c) return false;
  showCompile(si, int(c - model_->session(si)->compiles.data()));
  return true;
}

bool Workbench::selectStage(const QString& name) {
  const SessionCompile* c = currentCompile();
  if (!c) return false;
  int i = c->stage_index(name.toStdString());
  if (i < 0)  // "cse" finds "forward cse #6"
    for (int k = 0; k < int(c->stages.size()) && i < 0; ++k)
      if (c->stages[size_t(k)].pass == name.toStdString()) i = k;
  if (i < 0) return false;
  showStage(i);
  return true;
}

bool Workbench::selectStageAt(int index) {
  const SessionCompile* c = currentCompile();
  if (!c || index < 0 || index >= int(c->stages.size())) return false;
  showStage(index);
  return true;
}

void Workbench::showCompile(int session, int compile, const QString& preferStage) {
  bool same_session = session == session_;
  if (!same_session) parsed_.clear();
  session_ = session;
  if (!same_session) showTraceViews(session);
  compile_ = compile;
  selection_.clear();
  selection_stage_ = -1;
  const SessionCompile* c = currentCompile();
  updateSource();
  updateGuards();
  fillCodeCombo();
  int stage = -1;
  if (!preferStage.isEmpty()) {
    stage = c->stage_index(preferStage.toStdString());
    for (int k = 0; k < int(c->stages.size()) && stage < 0; ++k)
      if (c->stages[size_t(k)].pass == preferStage.toStdString()) stage = k;
    if (stage < 0) log_->appendPlainText("no stage " + preferStage + " in [" + QString::fromStdString(c->id) + "]");
  }
  // By default the most telling graph: the forward graph of a training compile, else the first graph.
  if (stage < 0) stage = c->stage_index("aot_forward_graph");
  if (stage < 0)
    for (int k = 0; k < int(c->stages.size()) && stage < 0; ++k)
      if (c->stages[size_t(k)].kind == StageKind::Graph) stage = k;
  stage_ = -1;
  graph_stage_ = -1;
  showNumericsOfStage();
  minifier_->setCompile(currentSession(), compile_, stage);
  // A code stage asked for first: the graph shows the graph stage before it.
  if (stage >= 0 && c->stages[size_t(stage)].kind == StageKind::Code) {
    int graph = -1;
    for (int k = 0; k < int(c->stages.size()); ++k)
      if (c->stages[size_t(k)].kind == StageKind::Graph && (k < stage || graph < 0)) graph = k;
    if (graph >= 0) showStage(graph);
  }
  if (stage >= 0) showStage(stage);
  else updateStepper();
}

void Workbench::stepStage(int delta) {
  const SessionCompile* c = currentCompile();
  if (!c) return;
  int s = step_stage(*c, stage_, delta, changed_only_->isChecked());
  if (s >= 0 && s != stage_) showStage(s);
}

void Workbench::setChangedOnly(bool on) {
  if (changed_only_->isChecked() != on) changed_only_->setChecked(on);
}

void Workbench::setDiffMode(bool on) {
  if (diff_->isChecked() != on) diff_->setChecked(on);
}

std::shared_ptr<const Graph> Workbench::loadedGraph(int stage) const {
  const SessionCompile* c = currentCompile();
  if (!c || stage < 0 || stage >= int(c->stages.size())) return nullptr;
  if (c->stages[size_t(stage)].graph) return c->stages[size_t(stage)].graph;
  auto it = parsed_.find({compile_, stage});
  return it == parsed_.end() ? nullptr : it->second;
}

void Workbench::updateStepper() {
  updating_ = true;
  const SessionCompile* c = currentCompile();
  stage_combo_->clear();
  if (c) {
    for (int i = 0; i < int(c->stages.size()); ++i) {
      const SessionStage& st = c->stages[size_t(i)];
      if (changed_only_->isChecked() && !st.changed && i != stage_) continue;
      // Short labels, so the box shows whole names: code stages carry an icon,
      // unchanged ones are grey (as in the session tree), both say so in the tooltip.
      QString label = QString::fromStdString(st.name);
      if (st.kind == StageKind::Code) stage_combo_->addItem(style()->standardIcon(QStyle::SP_FileIcon), label, i);
      else stage_combo_->addItem(label, i);
      int row = stage_combo_->count() - 1;
      if (!st.changed) stage_combo_->setItemData(row, QColor(Qt::gray), Qt::ForegroundRole);
      stage_combo_->setItemData(row, label + (st.kind == StageKind::Code ? " (code, shown in the Code tab)" : "") +
                                         (st.changed ? "" : " (unchanged: the pass left the graph as it was)"),
                                Qt::ToolTipRole);
      if (i == stage_) stage_combo_->setCurrentIndex(stage_combo_->count() - 1);
    }
    prev_->setEnabled(step_stage(*c, stage_, -1, changed_only_->isChecked()) != stage_);
    next_->setEnabled(step_stage(*c, stage_, 1, changed_only_->isChecked()) != stage_);
    QModelIndex idx = model_->stageIndex(session_, compile_, stage_);
    if (idx.isValid()) {
      tree_->setCurrentIndex(idx);
      tree_->scrollTo(idx);
    }
  }
  updating_ = false;
}

void Workbench::showStage(int stage) {
  auto s = currentSession();
  const SessionCompile* c = currentCompile();
  if (!s || !c || stage < 0 || stage >= int(c->stages.size())) return;
  const SessionStage& st = c->stages[size_t(stage)];
  if (st.kind == StageKind::Code) {
    showCodeStage(stage);
    return;
  }
  stage_ = stage;
  graph_stage_ = stage;
  // A code line's nodes are selected without leaving the code for them.
  if (centreTab() != "graph" && !codeBesideGraph() && !stay_in_code_) showCentre("graph");
  updateStepper();
  showNumericsOfStage();
  // The minifier offers the graph on screen first.
  minifier_->setCompile(s, compile_, stage);
  stage_requested_at_ = now_seconds();
  int ci = compile_, si = session_;
  std::vector<std::string> names = selection_;
  int from = selection_stage_;
  bool diff = diff_->isChecked();
  viewer_->post("stage", [this, s, ci, si, stage, names, from, diff](JobContext& ctx) -> JobRunner::Done {
    const SessionCompile& c = s->compiles[size_t(ci)];
    std::map<int, std::shared_ptr<const Graph>> parsed;
    auto lookup = [&](int i) -> std::shared_ptr<const Graph> {
      if (i < 0 || i >= int(c.stages.size()) || c.stages[size_t(i)].kind != StageKind::Graph) return nullptr;
      if (auto it = parsed.find(i); it != parsed.end()) return it->second;
      auto g = stage_graph(*s, c, c.stages[size_t(i)]);
      return parsed[i] = g ? *g : nullptr;
    };
    auto g = stage_graph(*s, c, c.stages[size_t(stage)]);
    if (!g) {
      QString msg = QString::fromStdString(g.status().to_string());
      return [this, msg, stage] { onStageFailed(stage, msg); };
    }
    parsed[stage] = *g;
    std::vector<NodeId> linked;
    if (from >= 0 && !names.empty() && !ctx.cancelled()) linked = linked_nodes(c, from, stage, names, lookup);
    std::optional<StageDiff> d;
    int base = diff_base(c, stage);
    if (diff && base >= 0)
      if (auto bg = lookup(base)) d = diff_graphs(*bg, **g);
    return [this, parsed, linked, d, stage, ci, si] { onStageLoaded(si, ci, stage, parsed, linked, d); };
  });
}

void Workbench::onStageFailed(int stage, const QString& message) {
  if (stage != graph_stage_) return;
  shown_graph_.reset();
  graph_->setGraph(nullptr);
  applyColourMode();
  stage_info_text_ = "Cannot show this stage: " + message;
  stage_info_->setText("<span style='color:#c03030'>" + stage_info_text_.toHtmlEscaped() + "</span>");
  log_->appendPlainText(stage_info_text_);
  emit stageShown(stage);
}

void Workbench::onStageLoaded(int session, int compile, int stage, const std::map<int, std::shared_ptr<const Graph>>& parsed,
                              const std::vector<NodeId>& linked, const std::optional<StageDiff>& diff) {
  if (session != session_ || compile != compile_ || stage != graph_stage_) return;  // the user has moved on
  for (const auto& [i, g] : parsed)
    if (g) parsed_[{compile, i}] = g;
  const SessionCompile* c = currentCompile();
  const SessionStage& st = c->stages[size_t(stage)];
  auto g = parsed.at(stage);
  if (g != shown_graph_) {
    shown_graph_ = g;
    // Clearing first drops the old layout's boxes: GraphView would otherwise
    // paint them against the new graph until its layout arrives.
    graph_->setGraph(nullptr);
    // The scheduler's groups belong to the stage's own graph (not a parsed copy of another).
    graph_->setGraph(g, g == st.graph ? st.fusion_groups : std::vector<int>{});
  }
  applyColourMode();  // the stage's own numerics, or none
  graph_->clearMarks();
  graph_->selectNodes(linked);
  QString info = QString("<b>%1</b>").arg(html(st.name));
  if (st.seconds > 0) info += " &middot; " + seconds_text(st.seconds);
  info += QString(" &middot; %1 nodes, %2 ops").arg(g->size()).arg(std::count_if(g->nodes.begin(), g->nodes.end(), is_call));
  if (!st.summary.empty()) info += " &middot; " + html(st.summary);
  QString plain_diff;
  if (diff) {
    graph_->markNodes(diff->added, kAdded);
    graph_->markNodes(diff->rewritten, kRewritten);
    plain_diff = QString("diff: +%1 added, ~%2 rewritten, -%3 removed").arg(diff->added.size()).arg(diff->rewritten.size()).arg(diff->removed.size());
    info += QString("<br><span style='color:%1'>+%2 added</span> &nbsp; <span style='color:%3'>~%4 rewritten</span> &nbsp; "
                    "<span style='color:%5'>&minus;%6 removed</span>")
                .arg(kAdded.name()).arg(diff->added.size()).arg(kRewritten.name()).arg(diff->rewritten.size())
                .arg(kRemoved.name()).arg(diff->removed.size());
    if (!diff->removed_names.empty()) {
      QStringList removed;
      for (size_t i = 0; i < diff->removed_names.size() && i < 12; ++i) removed << QString::fromStdString(diff->removed_names[i]);
      if (diff->removed_names.size() > 12) removed << QString("... %1 more").arg(diff->removed_names.size() - 12);
      info += " (" + removed.join(", ").toHtmlEscaped() + ")";
    }
    int base = diff_base(*c, stage);
    if (base >= 0) info += " vs <i>" + html(c->stages[size_t(base)].name) + "</i>";
  }
  if (!linked.empty()) info += QString(" &middot; %1 node(s) linked to the selection").arg(linked.size());
  // A code stage shown meanwhile keeps the line above the graph for itself.
  if (stage_ == stage) {
    stage_info_text_ = QString::fromStdString(st.name) + (plain_diff.isEmpty() ? "" : " " + plain_diff);
    stage_info_->setText(info);
  }
  updateNodePanel();
  selectPendingCodeNodes(stage);
  emit stageShown(stage);
}

void Workbench::onNodeClicked(NodeId id) {
  if (!shown_graph_ || id < 0 || id >= NodeId(shown_graph_->size())) return;
  const Node& n = (*shown_graph_)[id];
  selection_ = {n.name};
  selection_stage_ = graph_stage_;
  graph_->selectNodes({id});
  updateNodePanel();
  // The user line that made the node, or the repro line that defines it;
  // when only a stage not parsed yet knows it, once loadAllStageGraphs has parsed them.
  source_jump_pending_ = !jumpToNodeSource();
  loadAllStageGraphs();
  showCodeOfNode(n.name);
  for (int r = 0; r < int(numerics_->result().rows.size()); ++r)
    if (numerics_->result().rows[size_t(r)].name == n.name) numerics_table_->selectRow(r);
}

bool Workbench::jumpToNodeSource() {
  auto s = currentSession();
  const SessionCompile* c = currentCompile();
  if (!s || !c || selection_.empty() || selection_stage_ < 0) return false;
  auto ref = node_source(*s, *c, selection_stage_, selection_.front(), [this](int i) { return loadedGraph(i); });
  if (ref) jumpToSource(ref->file, ref->line);
  return ref.has_value();
}

void Workbench::loadAllStageGraphs() {
  // A dump's stages are parsed when first shown; the Node panel wants the
  // selection in every stage, so parse the rest on the worker, then refill it.
  auto s = currentSession();
  const SessionCompile* c = currentCompile();
  if (!s || !c) return;
  std::vector<int> missing;
  for (int i = 0; i < int(c->stages.size()); ++i)
    if (c->stages[size_t(i)].kind == StageKind::Graph && c->stages[size_t(i)].changed && !loadedGraph(i)) missing.push_back(i);
  if (missing.empty()) return;
  int si = session_, ci = compile_;
  viewer_->post("all stages", [this, s, si, ci, missing](JobContext& ctx) -> JobRunner::Done {
    const SessionCompile& c = s->compiles[size_t(ci)];
    std::map<int, std::shared_ptr<const Graph>> parsed;
    for (int i : missing) {
      if (ctx.cancelled()) break;
      if (auto g = stage_graph(*s, c, c.stages[size_t(i)])) parsed[i] = *g;
    }
    return [this, si, ci, parsed] {
      if (si != session_ || ci != compile_) return;
      for (const auto& [i, g] : parsed) parsed_[{ci, i}] = g;
      updateNodePanel();
      if (source_jump_pending_) jumpToNodeSource();
      source_jump_pending_ = false;
    };
  });
}

bool Workbench::selectNodeByName(const QString& name) {
  if (!shown_graph_) return false;
  NodeId id = shown_graph_->find(name.toStdString());
  if (id == kNoNode) return false;
  onNodeClicked(id);
  return true;
}

void Workbench::updateNodePanel() {
  const SessionCompile* c = currentCompile();
  if (!c || !shown_graph_ || selection_.empty() || selection_stage_ < 0) {
    node_panel_->setHtml("<p style='color:gray'>Click a node in the graph to see its details, its source line and what it "
                         "became (or came from) in every other stage.</p>");
    return;
  }
  QString out;
  // The node as it is in the shown stage: the selection itself, or what provenance linked to it.
  std::vector<NodeId> here;
  if (selection_stage_ == graph_stage_) {
    NodeId id = shown_graph_->find(selection_.front());
    if (id != kNoNode) here.push_back(id);
  } else {
    here = graph_->selectedNodes();
  }
  for (NodeId id : here) {
    const Node& n = (*shown_graph_)[id];
    out += QString("<h3>%1</h3><table>").arg(html(n.name));
    out += QString("<tr><td><b>op</b></td><td>%1</td></tr>").arg(html(std::string(op_kind_name(n.op))));
    out += QString("<tr><td><b>target</b></td><td><code>%1</code></td></tr>").arg(html(n.target));
    QStringList args;
    for (const Arg& a : n.args) args << QString::fromStdString(print_arg(*shown_graph_, a));
    for (const auto& [k, v] : n.kwargs) args << QString::fromStdString(k + "=" + print_arg(*shown_graph_, v));
    out += QString("<tr><td><b>args</b></td><td><code>%1</code></td></tr>").arg(args.join(", ").toHtmlEscaped());
    if (n.meta.val.is_tensor()) {
      const TensorMeta& t = n.meta.val.tensor;
      QStringList sizes;
      for (const SymInt& v : t.sizes) sizes << QString::fromStdString(v.to_string());
      out += QString("<tr><td><b>value</b></td><td>%1[%2] %3</td></tr>")
                 .arg(html(t.dtype), sizes.join(", "), html(t.device));
    }
    if (!n.meta.scope.empty()) out += QString("<tr><td><b>scope</b></td><td>%1</td></tr>").arg(html(n.meta.scope));
    if (!n.meta.from.empty()) {
      QStringList from;
      for (const std::string& f : n.meta.from) from << QString::fromStdString(f);
      out += QString("<tr><td><b>from</b></td><td>%1</td></tr>").arg(from.join(", ").toHtmlEscaped());
    }
    for (const StackFrame& f : n.meta.stack)
      out += QString("<tr><td><b>source</b></td><td>%1:%2 in %3<br><code>%4</code></td></tr>")
                 .arg(html(f.file)).arg(f.line).arg(html(f.function), html(f.code));
    out += "</table>";
  }
  // Every other stage whose graph is at hand: the selection's ancestors and descendants there.
  out += QString("<h4>In other stages (selected in %1)</h4><ul>").arg(html(c->stages[size_t(selection_stage_)].name));
  auto lookup = [this](int i) { return loadedGraph(i); };
  for (int i = 0; i < int(c->stages.size()); ++i) {
    const SessionStage& st = c->stages[size_t(i)];
    if (st.kind != StageKind::Graph || (!st.changed && i != selection_stage_)) continue;
    auto g = loadedGraph(i);
    if (!g) continue;
    std::vector<NodeId> ids = i == selection_stage_ ? std::vector<NodeId>{g->find(selection_.front())}
                                                    : linked_nodes(*c, selection_stage_, i, selection_, lookup);
    QStringList names;
    for (NodeId id : ids)
      if (id != kNoNode && names.size() < 8) names << QString::fromStdString((*g)[id].name);
    if (ids.size() > 8) names << QString("... %1 more").arg(ids.size() - 8);
    out += QString("<li><a href='stage:%1'>%2</a>: %3</li>")
               .arg(i)
               .arg(html(st.name))
               .arg(names.isEmpty() ? QString("<span style='color:gray'>none</span>") : names.join(", ").toHtmlEscaped());
  }
  out += "</ul>";
  node_panel_->setHtml(out);
}

void Workbench::fillCodeCombo() {
  updating_ = true;
  code_combo_->clear();
  const SessionCompile* c = currentCompile();
  if (c)
    for (int i = 0; i < int(c->stages.size()); ++i)
      if (c->stages[size_t(i)].kind == StageKind::Code)
        code_combo_->addItem(QString::fromStdString(c->stages[size_t(i)].name + "  (" + c->stages[size_t(i)].summary + ")"), i);
  updating_ = false;
  // Links are recomputed here: Kiln's stages of a dump arrive later and refill the list.
  code_links_ = c ? code_links(*currentSession(), *c) : std::vector<CodeLinkGroup>{};
  if (code_combo_->count() > 0) {
    int i = code_combo_->itemData(0).toInt();
    const SessionStage& st = c->stages[size_t(i)];
    code_->setCode(QString::fromStdString(st.text), QString::fromStdString(st.language));
    code_shown_stage_ = i;
  } else {
    code_->setCode("No generated code for this compile.", "");
    code_shown_stage_ = -1;
  }
}

void Workbench::showCodeStage(int stage) {
  const SessionCompile* c = currentCompile();
  if (!c || stage < 0 || stage >= int(c->stages.size())) return;
  const SessionStage& st = c->stages[size_t(stage)];
  code_->setCode(QString::fromStdString(st.text), QString::fromStdString(st.language));
  code_shown_stage_ = stage;
  updating_ = true;
  for (int i = 0; i < code_combo_->count(); ++i)
    if (code_combo_->itemData(i).toInt() == stage) code_combo_->setCurrentIndex(i);
  updating_ = false;
  showCentre("code");
  // The stepper moves onto code stages too; the graph keeps the last graph stage.
  stage_ = stage;
  updateStepper();
  stage_info_text_ = QString::fromStdString(st.name);
  stage_info_->setText(QString("<b>%1</b> &middot; %2 &middot; %3 (in the Code tab)")
                           .arg(html(st.name), seconds_text(st.seconds), html(st.summary)));
  emit stageShown(stage);
}

}  // namespace kiln::viewer
