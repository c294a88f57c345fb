#pragma once
// Compare mode (the centre's Compare tab): any two stages side by side, of one
// compile, of two compiles, or of two sessions (a graph before and after
// minification, two ranks of a trace), as Compiler Explorer's pass view does.
// Two graphs have their nodes matched by name: removed (left only, red),
// added (right only, green) and rewritten (orange) are outlined, and clicking
// a node selects its match on the other side (by name, else by provenance,
// NodeMeta::from). Below, a side-by-side text diff of the two stages' text:
// the generated code, or the printed graph module.
#include <QWidget>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "session/session.h"
#include "session/stage_links.h"
#include "session/text_diff.h"

class QComboBox;
class QLabel;
class QSplitter;
class QToolButton;

namespace kiln {
class GraphView;
}

namespace kiln::viewer {

class CodeEditor;
class JobRunner;
class SessionModel;

class CompareView : public QWidget {
  Q_OBJECT
 public:
  struct Side {
    int session = -1, compile = -1, stage = -1;
    bool operator==(const Side&) const = default;
  };
  CompareView(SessionModel* model, QWidget* parent = nullptr);
  ~CompareView() override;

  // Shows the two stages; their graphs and texts are read and compared on a worker.
  void setSides(Side left, Side right);
  Side side(int i) const { return sides_[i]; }
  void swapSides();
  void refreshSessions();  // the model's sessions changed: the pickers follow
  bool isBusy() const;
  void stop();

  // What the last comparison found, for the tests and the summary line.
  GraphView* graphView(int side) const { return graphs_[side]; }
  CodeEditor* textView(int side) const { return texts_[side]; }
  const std::optional<session::StageDiff>& graphDiff() const { return diff_; }
  const session::TextDiff& textDiff() const { return text_diff_; }
  int matchedNodes() const { return matched_; }
  QString summary() const { return summary_; }
  // Selects a node on one side and its matches on the other; their names.
  std::vector<std::string> selectNode(int side, const std::string& name);

 signals:
  void compared();  // a comparison's result is on screen

 private:
  struct Loaded;
  void fillPickers(int side);
  void onPicked(int side);
  void load();
  void show(const std::shared_ptr<const Loaded>& r);
  void onNodeClicked(int side, NodeId id);
  std::vector<NodeId> matchesOf(int side, NodeId id) const;

  SessionModel* model_;
  JobRunner* runner_;
  Side sides_[2];
  QComboBox* sessions_[2];
  QComboBox* compiles_[2];
  QComboBox* stages_[2];
  QToolButton* swap_;
  QLabel* summary_label_;
  QSplitter* body_;
  QWidget* graph_pane_;
  GraphView* graphs_[2];
  CodeEditor* texts_[2];
  QLabel* text_titles_[2];
  std::shared_ptr<const Loaded> shown_;
  std::optional<session::StageDiff> diff_;
  session::TextDiff text_diff_;
  int matched_ = 0;
  QString summary_;
  bool updating_ = false;
  bool syncing_ = false;
  bool graphs_sized_ = false;  // the graphs were given their share once shown
};

}  // namespace kiln::viewer
