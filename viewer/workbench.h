#pragma once
// The workbench window: the session tree on the left, the stage stepper in
// the middle above three tabs (the graph of the current stage, its generated
// code, which can also stand beside the graph, and the compare view of any two
// stages or sessions), the source and node panels on the right, and guards/recompiles, numerics, the
// minifier, the op-corpus table and the log below. Everything long (compiling
// a program, indexing a dump, parsing a stage graph, numerics) runs on
// JobRunner workers; a panel changes only when its job's result comes back.
//
// It lives in kiln_viewer rather than app/ so that the end-to-end tests drive
// the real window offscreen (tests/viewer/test_workbench.cpp); app/gui/main.cpp
// only reads the command line.
#include <QMainWindow>
#include <QStringList>

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "session/code_links.h"
#include "session/numerics.h"
#include "session/session.h"
#include "session/stage_links.h"
#include "viewer/session_names.h"

class QAction;
class QActionGroup;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableView;
class QTabWidget;
class QTextBrowser;
class QToolButton;
class QTreeView;
class QTableWidget;
class QDockWidget;
class QSplitter;
class QStackedWidget;
class QTabBar;

namespace kiln {
class GraphView;
class Workspace;
}

namespace kiln::viewer {

class CodeEditor;
class CodeView;
class CompareView;
class CorpusPanel;
class GuardModel;
class JobRunner;
class MinifierPanel;
class NumericsDetail;
class NumericsModel;
class RecompileModel;
class SessionModel;
class SignatureModel;
class TracePanel;
struct TraceViews;

class Workbench : public QMainWindow {
  Q_OBJECT
 public:
  explicit Workbench(QWidget* parent = nullptr);
  ~Workbench() override;

  // Opens each path on the loading worker: a program is compiled, a dump
  // indexed (through the workspace, so a second open is instant), an op corpus
  // folder runs in the conformance panel.
  void open(const QStringList& paths);
  // What to show once the next session has opened (the command line's --select / --stage).
  void setPendingSelection(const QString& compileId, const QString& stage);

  // Selection in the most recently opened session; false when there is no such compile or stage.
  bool selectCompile(const QString& id);
  bool selectStage(const QString& name);
  bool selectStageAt(int index);  // by position in the current compile's stage list
  void stepStage(int delta);  // previous/next, honouring "changed only"
  void setChangedOnly(bool on);
  // What programs opened from now on may take and touch (the command line's
  // --time-limit, --allow-read, --allow-write).
  void setProgramLimits(double time_limit_s, std::vector<std::string> allow_read, std::vector<std::string> allow_write) {
    program_time_limit_s_ = time_limit_s;
    program_allow_read_ = std::move(allow_read);
    program_allow_write_ = std::move(allow_write);
  }
  // How programs opened from now on split their joint graphs: "default" or "min-cut".
  void setPartitioner(const QString& name);
  QString partitioner() const { return partitioner_; }
  void setDiffMode(bool on);
  bool selectNodeByName(const QString& name);
  // Raises a panel by name: session, source, node, guards, numerics, minifier, trace (or its
  // tabs ranks and timeline), corpus, log; or a centre tab (showCentre).
  bool showPanel(const QString& name);
  // The centre's tab: "graph", "code", "compare", or "graph+code" (the code beside the graph).
  bool showCentre(const QString& tab);
  QString centreTab() const;  // "graph", "code" or "compare"
  void setCodeBesideGraph(bool on);
  bool codeBesideGraph() const;
  // Compare mode on two stages, each "[#N:][COMPILE:]STAGE": N the session
  // (1 = the first opened), COMPILE a compile id, STAGE a stage name or pass;
  // what is left out is the shown session and compile. False (with lastError)
  // when one does not name a stage.
  bool compare(const QString& left, const QString& right);
  // Compare mode on the shown stage and the one before it (or the next, at the first).
  void compareWithPrevious();
  // View > Reset layout: every dock back in its place, shown, at its first size.
  void resetLayout();
  void measureNumerics();
  // Stops a numerics run: the ladder checks before each node, pass and LLVM pass.
  void cancelNumerics();
  bool numericsRunning() const;
  // The numerics panel's "Minify from here": the minifier on the subgraph of
  // `node` (a node of the measured stage), on the minifier panel's settings.
  bool minifyFromNode(const QString& node);

  // True when no job is queued or running and the graph (if any) is laid out.
  bool isSettled() const;
  QString busyReason() const;  // what isSettled waits for, for messages
  // Calls `fn` once settled (polling; also after `timeout_ms`, with `timedOut`).
  void whenSettled(std::function<void(bool timedOut)> fn, int timeout_ms = 120000);

  // For tests and scripting.
  SessionModel* sessionModel() const { return model_; }
  GraphView* graphView() const { return graph_; }
  CodeEditor* sourceView() const { return source_; }
  CodeEditor* codeView() const { return code_; }
  CodeView* codePanel() const { return code_panel_; }
  CompareView* compareView() const { return compare_; }
  GuardModel* guardModel() const { return guards_; }
  RecompileModel* recompileModel() const { return recompiles_; }
  SignatureModel* signatureModel() const { return signature_; }
  NumericsModel* numericsModel() const { return numerics_; }
  NumericsDetail* numericsDetail() const { return numerics_detail_; }
  CorpusPanel* corpusPanel() const { return corpus_; }
  MinifierPanel* minifierPanel() const { return minifier_; }
  TracePanel* tracePanel() const { return trace_panel_; }
  std::shared_ptr<const Session> currentSession() const;
  const SessionCompile* currentCompile() const;
  int currentStageIndex() const { return stage_; }
  const SessionStage* currentStage() const;
  std::vector<std::string> selectedNodeNames() const { return selection_; }
  QString stageInfoText() const;
  QString signatureVerdict() const;
  QString numericsNotes() const;  // the line above the numerics table
  QString lastError() const { return last_error_; }
  double lastOpenSeconds() const { return last_open_seconds_; }
  double lastStageSeconds() const { return last_stage_seconds_; }

 signals:
  void sessionOpened(int index);
  // A dump's session now also lists Kiln's stages (added after it opened).
  void kilnStagesAdded(int index);
  void openFailed(const QString& path, const QString& error);
  void stageShown(int stage);
  void numericsDone();

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  void closeEvent(QCloseEvent* e) override;
  void showEvent(QShowEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  bool event(QEvent* e) override;  // notes separator drags

 private:
  double program_time_limit_s_ = 0;
  QString partitioner_ = "default";
  QActionGroup* partitioner_actions_ = nullptr;
  std::vector<std::string> program_allow_read_, program_allow_write_;
  // workbench.cpp: the frame, menus, opening, progress.
  void buildMenus();
  void buildDocks();
  void openOne(const QString& path);
  // A program being opened, shown in the source panel while it runs and
  // compiles; its session's own source (with marks) replaces it once open.
  void showOpeningSource(const QString& path, const QString& text);
  QString opening_source_;  // the path shown so, until its session opens or the load ends
  void onSessionLoaded(std::shared_ptr<Session> s, const QString& path, double seconds);
  void expandSession(int index);
  // Dumps open with PyTorch's stages; Kiln's pipeline on them follows on the loader.
  void addKilnStages(std::shared_ptr<const Session> s, const QString& path);
  void onKilnStagesAdded(std::shared_ptr<Session> with, const std::shared_ptr<const Session>& without, double seconds);
  void addRecent(const QString& path);
  void refreshRecentMenu();
  void setBusy(const QString& what, double fraction);
  void updateBusy();
  QDockWidget* dock(const QString& title, const QString& name, QWidget* w, Qt::DockWidgetArea area);
  QDockWidget* dockNamed(const QString& name) const;
  void arrangeDocks();  // tabs, raised tabs and corners of the first layout
  // The side docks keep their share of the window's width (the bottom ones of
  // its height) through resizes: Qt gives a grown window's space to the
  // graph alone, so a window shrunk and restored kept its docks squeezed.
  // The shares change only by hand (a separator dragged) or on reset.
  void applyDockShares();
  void recordDockShares();
  QDockWidget* shownDock(Qt::DockWidgetArea area) const;  // the dock showing in an area
  std::map<int, double> dock_shares_;  // by Qt::DockWidgetArea
  bool dock_shares_pending_ = false;
  bool separator_pressed_ = false;

  // workbench_stage.cpp: selection, the stepper, the graph and the links between stages.
  QWidget* buildStagePanel();
  void onTreeActivated(const QModelIndex& index);
  void showCompile(int session, int compile, const QString& preferStage = {});
  void showStage(int stage);
  void onStageLoaded(int session, int compile, int stage, const std::map<int, std::shared_ptr<const Graph>>& parsed,
                     const std::vector<NodeId>& linked, const std::optional<StageDiff>& diff);
  void onStageFailed(int stage, const QString& message);
  void onNodeClicked(NodeId id);
  bool jumpToNodeSource();  // the selection's source line, when one is known from what is parsed
  bool source_jump_pending_ = false;
  void updateNodePanel();
  void loadAllStageGraphs();
  void updateStepper();
  void showCodeStage(int stage);
  void fillCodeCombo();
  std::shared_ptr<const Graph> loadedGraph(int stage) const;

  // workbench_panels.cpp: source, guards, numerics, minifier.
  QWidget* buildGuardsPanel();
  QWidget* buildNumericsPanel();
  QWidget* buildMinifierPanel();
  void updateSource();
  // Another file the dump quotes (a model's library file): its quoted lines
  // in the source view under their real numbers, until the next updateSource.
  bool showQuotedSource(const std::string& file);
  void updateGuards();
  void checkSignature();
  void jumpToSource(const std::string& file, int line);
  void jumpToFirstDivergent();
  // Numerics are kept per stage: a run finished while the user looked
  // elsewhere is shown on returning, and a stage shows only its own table.
  struct NumericsKey {
    std::string path, compile, stage;  // the session's path, a compile id, a stage name
    auto operator<=>(const NumericsKey&) const = default;
  };
  std::optional<NumericsKey> numericsKey() const;  // the graph stage shown
  void showNumericsOfStage();  // its kept result, its run, or an empty table
  void showNumericsDetail();   // the selected row, else the first divergent one
  // The graph's colours for the stage shown: by error when it was measured
  // (and "Colour graph by error" is on), else the user's own choice where
  // the stage has what it needs (fusion groups), else by op kind.
  void applyColourMode();

  // workbench_centre.cpp: the centre's tabs and compare mode.
  QWidget* buildCentre(QWidget* graph_page);
  void onCentreTab(int index);
  std::optional<std::array<int, 3>> parseStageSpec(const QString& spec);

  // workbench_links.cpp: a node's lines in the generated code, a code line's nodes.
  void showCodeOfNode(const std::string& node);
  void onCodeLineClicked(int line);
  void selectPendingCodeNodes(int stage);

  // workbench_trace.cpp: the ranks and timeline of a dump, computed on their
  // own worker when it opens, shown while one of its compiles is.
  QWidget* buildTracePanel();
  void loadTraceViews(const std::shared_ptr<const Session>& s);
  void showTraceViews(int session);

  JobRunner* loader_;  // opening: compile, index
  JobRunner* viewer_;  // stage graphs, provenance, diffs
  JobRunner* numerics_runner_;
  JobRunner* trace_runner_;  // rank comparison and timeline of a dump
  std::unique_ptr<Workspace> workspace_;  // touched only on the loading worker
  bool workspace_tried_ = false;

  SessionModel* model_;
  QTreeView* tree_;
  GraphView* graph_;
  CodeEditor* source_;
  CodeEditor* code_;
  CodeView* code_panel_;
  QComboBox* code_combo_;
  CompareView* compare_ = nullptr;
  QTabBar* centre_tabs_ = nullptr;
  QSplitter* centre_split_ = nullptr;
  QStackedWidget* centre_stack_ = nullptr;
  QCheckBox* beside_ = nullptr;  // the code beside the graph
  bool stay_in_code_ = false;    // a code line clicked: its graph stage loads behind the Code tab
  QTextBrowser* node_panel_;
  QPlainTextEdit* log_;
  CorpusPanel* corpus_;
  MinifierPanel* minifier_;
  TracePanel* trace_panel_ = nullptr;
  std::map<std::string, std::shared_ptr<const TraceViews>> trace_views_;  // by session path
  int trace_views_session_ = -1;  // the session the panel shows
  GuardModel* guards_;
  RecompileModel* recompiles_;
  SignatureModel* signature_;
  QTableView* guard_table_;
  QTableView* recompile_table_;
  QTableWidget* breaks_;
  QLabel* signature_verdict_;
  NumericsModel* numerics_;
  QTableView* numerics_table_;
  QLabel* numerics_notes_;
  NumericsDetail* numerics_detail_;
  QDoubleSpinBox* tolerance_;
  QCheckBox* colour_by_error_;
  std::map<NumericsKey, NumericsResult> numerics_results_;
  std::optional<NumericsKey> numerics_running_;  // what the run in flight measures
  std::optional<NumericsKey> numerics_shown_;    // whose result the table holds
  int user_colour_mode_ = 0;  // the colour mode last picked by hand: op kind or fusion group

  // Stepper bar.
  QToolButton* prev_;
  QToolButton* next_;
  QComboBox* stage_combo_;
  QCheckBox* changed_only_;
  QCheckBox* diff_;
  QComboBox* colour_mode_;
  QLineEdit* find_;
  QLabel* stage_info_;

  QProgressBar* progress_;
  QPushButton* cancel_;
  QLabel* status_;
  QMenu* recent_menu_;
  std::vector<QDockWidget*> docks_;
  QDockWidget* session_dock_ = nullptr;
  QDockWidget* source_dock_ = nullptr;
  QDockWidget* guards_dock_ = nullptr;
  bool sized_ = false;

  int session_ = -1, compile_ = -1, stage_ = -1;
  int graph_stage_ = -1;  // the stage whose graph is shown (stage_ may be a code stage)
  int code_shown_stage_ = -1;  // the code stage in the Code tab
  std::vector<CodeLinkGroup> code_links_;  // the current compile's node <-> code links
  std::vector<std::string> pending_code_nodes_;  // a code line's nodes, selected once their stage is shown
  int pending_code_nodes_stage_ = -1;
  std::shared_ptr<const Graph> shown_graph_;
  std::map<std::pair<int, int>, std::shared_ptr<const Graph>> parsed_;  // (compile, stage) -> parsed trace graph
  double stage_requested_at_ = 0;
  static double now_seconds();
  static double seconds_since(double t) { return now_seconds() - t; }
  std::vector<std::string> selection_;  // node names in stage selection_stage_
  int selection_stage_ = -1;
  std::vector<std::vector<NodeId>> linked_;  // per stage of the compile: the selection's relatives
  QString pending_compile_, pending_stage_;
  QString pending_kiln_stage_;  // --stage "kiln ...": shown once Kiln's stages are added
  QString last_error_;
  QString stage_info_text_;
  double last_open_seconds_ = 0, last_stage_seconds_ = 0;
  bool updating_ = false;
  const Session* recompiles_property_session_ = nullptr;  // the session the recompile table shows
  const Session* source_shown_for_ = nullptr;            // the session whose source is loaded
  std::string quoted_source_shown_;                      // non-empty: that quoted file is shown instead  // the UI is being filled in: ignore its own signals
};

}  // namespace kiln::viewer
