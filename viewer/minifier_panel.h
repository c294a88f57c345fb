#pragma once
// The minifier panel: pick a stage graph, a predicate and its tolerance,
// press Minify. The run is `kiln-cli minify` (minifier/minify.h behind it) in
// a child process, so a compiler crash or hang in a candidate can never take
// the workbench down; its step lines drive the live progress (ops left,
// strategy, oracle calls) and the log. The PyTorch repro.py it writes opens as
// a new session entry.
#include <QProcess>
#include <QWidget>

#include <memory>

#include "viewer/session.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace kiln::viewer {

class MinifierPanel : public QWidget {
  Q_OBJECT
 public:
  explicit MinifierPanel(QWidget* parent = nullptr);
  ~MinifierPanel() override;

  // The graphs offered: the graph stages of this compile; `preferred` is preselected.
  void setCompile(std::shared_ptr<const Session> s, int compile, int preferred);
  // Where kiln-cli is: beside the kiln binary unless set (tests), or KILN_CLI.
  void setCliPath(const QString& path) { cli_ = path; }
  void setCheck(const QString& check);
  void setInjectBug(const QString& bug);
  void start();
  void cancel();
  bool isRunning() const;
  QString reproPath() const { return repro_; }      // the Kiln repro folder of the last run
  QString torchRepro() const { return torch_repro_; }
  QString log() const;

 signals:
  void finished(bool ok);
  void reproReady(const QString& torchRepro);

 private:
  void onOutput();
  void onFinished(int code, QProcess::ExitStatus status);
  QString cliPath() const;

  std::shared_ptr<const Session> session_;
  int compile_ = -1;
  QComboBox* graph_;
  QComboBox* check_;
  QDoubleSpinBox* tolerance_;
  QSpinBox* jobs_;
  QDoubleSpinBox* timeout_;
  QComboBox* inject_;
  QPushButton* minify_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* state_;
  QPlainTextEdit* log_;
  QProcess* process_ = nullptr;
  QString cli_, out_dir_, repro_, torch_repro_, pending_line_;
  int initial_ops_ = 0;
};

}  // namespace kiln::viewer
