#pragma once
// The minifier panel: pick a stage graph, a predicate and its tolerance,
// press Minify. minify_stage() (session/minify_stage.h) runs on the panel's
// own worker; each candidate runs in a child process there, so a compiler
// crash or hang in one can never take the workbench down. Its progress
// callback drives the live progress (ops left, strategy, oracle calls) and
// the log; Cancel (or closing the panel) stops it within the children's poll
// interval. The PyTorch repro.py it writes opens as a new session entry.
#include <QWidget>

#include <atomic>
#include <memory>

#include "session/session.h"
#include "viewer/session_names.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace kiln::viewer {

class JobRunner;

class MinifierPanel : public QWidget {
  Q_OBJECT
 public:
  explicit MinifierPanel(QWidget* parent = nullptr);
  ~MinifierPanel() override;

  // The graphs offered: the graph stages of this compile; `preferred` is preselected.
  void setCompile(std::shared_ptr<const Session> s, int compile, int preferred);
  void setCheck(const QString& check);
  void setInjectBug(const QString& bug);
  // The oracle check: the Python that runs PyTorch, and (tests) a worker script instead of Kiln's.
  void setOraclePython(const QString& python, const QString& worker = {});
  void start();
  // The subgraph of `node` in graph stage `stage` of the compile set: the node
  // as the one output and what it depends on (the numerics panel's "Minify from here").
  void startFromNode(int stage, const QString& node);
  void cancel();
  bool isRunning() const;
  QString reproPath() const { return repro_; }      // the Kiln repro folder of the last run
  QString torchRepro() const { return torch_repro_; }
  QString log() const;

 signals:
  void finished(bool ok);
  void reproReady(const QString& torchRepro);

 private:
  void startRun(const QString& node);
  void onStep(int ops_before, int ops_after, const QString& strategy, int oracle_calls, const QString& line);
  void onFinished(bool ok, const QString& message);

  std::shared_ptr<const Session> session_;
  int compile_ = -1;
  QComboBox* graph_;
  QComboBox* check_;
  QDoubleSpinBox* tolerance_;
  QSpinBox* jobs_;
  QDoubleSpinBox* timeout_;
  QComboBox* inject_;
  QLineEdit* oracle_python_;
  QComboBox* torch_device_;
  QString oracle_worker_;
  QPushButton* minify_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* state_;
  QPlainTextEdit* log_;
  JobRunner* runner_;  // the panel's own worker: a minify run never waits behind a load
  bool running_ = false;
  QString out_dir_, repro_, torch_repro_;
  int initial_ops_ = 0;
};

}  // namespace kiln::viewer
