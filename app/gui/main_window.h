#pragma once
// The workbench window. Today it opens an op corpus and shows how Kiln's eager
// kernels compare with PyTorch; compile sessions, traces and the minifier join
// it as they land. Long work runs on a worker; the UI thread never waits.
#include <QMainWindow>

#include <atomic>
#include <memory>
#include <thread>

class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace kiln {

class CaseResultModel;
struct CaseResult;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Loads the corpus and runs every case on a worker thread.
  void openCorpus(const QString& dir);
  bool isBusy() const { return worker_.joinable() && !finished_; }

 signals:
  void runFinished();

 private:
  void cancelRun();
  void joinWorker();
  void onCaseDone(const CaseResult& r, int done, int total);
  void onRunEnded(const QString& error);

  CaseResultModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QLineEdit* filter_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QLabel* summary_;
  std::thread worker_;
  std::shared_ptr<std::atomic<bool>> cancelled_;
  std::atomic<bool> finished_{true};
};

}  // namespace kiln
