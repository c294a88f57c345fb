// The links between the graph and the generated code (session/code_links.h):
// clicking a node marks the lines of the kernels it went into in the Code
// tab and scrolls them into view; clicking a line of a kernel selects the nodes it was made from,
// switching the graph to their stage when another one is shown.
#include <QComboBox>
#include <QLabel>

#include <algorithm>

#include "core/graph/graph.h"
#include "viewer/code_editor.h"
#include "viewer/workbench.h"
#include "viewer/graph_view.h"

namespace kiln::viewer {

namespace {
const QColor kKernelLines(255, 236, 150);

QString lines_text(const std::vector<int>& lines) {
  QStringList parts;
  for (size_t i = 0; i < lines.size();) {
    size_t j = i;
    while (j + 1 < lines.size() && lines[j + 1] == lines[j] + 1) ++j;
    parts << (j > i ? QString("%1-%2").arg(lines[i]).arg(lines[j]) : QString::number(lines[i]));
    i = j + 1;
  }
  return parts.join(", ");
}

QString names_text(const std::vector<std::string>& names) {
  QStringList out;
  for (const std::string& n : names) out << QString::fromStdString(n);
  return out.join(", ");
}
// The stage whose graph is on screen: a pass that changed nothing shows the
// graph of the stage before it in its chain.
int shown_graph_stage(const SessionCompile& c, int stage) {
  while (stage >= 0 && !c.stages[size_t(stage)].changed && c.stages[size_t(stage)].parent >= 0) stage = c.stages[size_t(stage)].parent;
  return stage;
}

}  // namespace

void Workbench::showCodeOfNode(const std::string& node) {
  const SessionCompile* c = currentCompile();
  if (!c) return;
  auto spot = code_of_node(code_links_, shown_graph_stage(*c, graph_stage_), node, code_shown_stage_);
  if (!spot) return;  // in no kernel (an input, a view), or the compile has no links
  const SessionStage& st = c->stages[size_t(spot->code_stage)];
  if (code_shown_stage_ != spot->code_stage) {
    code_->setCode(QString::fromStdString(st.text), QString::fromStdString(st.language));
    code_shown_stage_ = spot->code_stage;
    updating_ = true;
    for (int i = 0; i < code_combo_->count(); ++i)
      if (code_combo_->itemData(i).toInt() == spot->code_stage) code_combo_->setCurrentIndex(i);
    updating_ = false;
  }
  code_->clearMarks();
  const QString tip = QString("%1 went into %2").arg(QString::fromStdString(node), names_text(spot->kernels));
  for (int line : spot->lines) code_->markLine(line, kKernelLines, tip);
  code_->goToLine(spot->lines.front());
  status_->setText(QString("%1: %2, lines %3 of %4 (Code tab)")
                       .arg(QString::fromStdString(node), names_text(spot->kernels), lines_text(spot->lines),
                            QString::fromStdString(st.name)));
}

void Workbench::onCodeLineClicked(int line) {
  const SessionCompile* c = currentCompile();
  if (!c || code_shown_stage_ < 0) return;
  const int on_screen = shown_graph_stage(*c, graph_stage_);
  auto spot = nodes_of_line(code_links_, code_shown_stage_, line, on_screen);
  // The shown graph may be another compile's pre-grad graph as far as these
  // names go (a backward's pre-grad names): then the kernel's own graph.
  auto in_shown = [&](const NodeSpot& s) {
    if (s.graph_stage != on_screen || !shown_graph_) return true;
    return std::any_of(s.nodes.begin(), s.nodes.end(), [&](const std::string& n) { return shown_graph_->find(n) != kNoNode; });
  };
  if (spot && !in_shown(*spot)) spot = nodes_of_line(code_links_, code_shown_stage_, line);
  if (!spot || spot->graph_stage < 0) return;
  // The kernel's own lines, marked as a node click would.
  code_->clearMarks();
  for (const CodeLinkGroup& g : code_links_) {
    if (g.code_stage != code_shown_stage_) continue;
    for (const std::string& k : spot->kernels)
      if (auto it = g.spans.find(k); it != g.spans.end())
        for (int l : it->second.lines()) code_->markLine(l, kKernelLines, QString::fromStdString(k));
  }
  status_->setText(QString("line %1: %2, made from %3 in %4")
                       .arg(line)
                       .arg(names_text(spot->kernels), spot->nodes.empty() ? QString("no graph node") : names_text(spot->nodes),
                            QString::fromStdString(c->stages[size_t(spot->graph_stage)].name)));
  pending_code_nodes_ = spot->nodes;
  pending_code_nodes_stage_ = spot->graph_stage;
  if (spot->graph_stage == on_screen && shown_graph_) selectPendingCodeNodes(spot->graph_stage);
  else {
    stay_in_code_ = true;
    showStage(spot->graph_stage);  // selected when its graph arrives
    stay_in_code_ = false;
  }
}

void Workbench::selectPendingCodeNodes(int stage) {
  const SessionCompile* c = currentCompile();
  if (!c || !shown_graph_ || pending_code_nodes_stage_ < 0) return;
  if (stage != pending_code_nodes_stage_ && shown_graph_stage(*c, stage) != pending_code_nodes_stage_) return;
  std::vector<NodeId> ids;
  std::vector<std::string> names;
  for (const std::string& name : pending_code_nodes_)
    if (NodeId id = shown_graph_->find(name); id != kNoNode) {
      ids.push_back(id);
      names.push_back(name);
    }
  pending_code_nodes_.clear();
  pending_code_nodes_stage_ = -1;
  if (ids.empty()) return;  // the log names nodes this graph does not have: the selection stays
  selection_ = std::move(names);
  selection_stage_ = graph_stage_;
  graph_->selectNodes(ids);
  updateNodePanel();
}

}  // namespace kiln::viewer
