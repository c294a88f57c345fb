#pragma once
// The op-corpus conformance table (the first workbench feature): every case of
// an op corpus run through the eager kernels on a worker, shown as it finishes.
#include <QWidget>

#include <atomic>
#include <memory>
#include <thread>

class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace kiln {
class CaseResultModel;
struct CaseResult;
}  // namespace kiln

namespace kiln::viewer {

class CorpusPanel : public QWidget {
  Q_OBJECT
 public:
  explicit CorpusPanel(QWidget* parent = nullptr);
  ~CorpusPanel() override;
  void openCorpus(const QString& dir);
  void cancel();
  bool isBusy() const { return !finished_; }
  CaseResultModel* model() const { return model_; }

 signals:
  void progress(int done, int total);
  void runFinished(const QString& summary);

 private:
  void onCaseDone(const CaseResult& r, int done, int total);
  void onRunEnded(const QString& error);
  void join();

  CaseResultModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QLineEdit* filter_;
  QLabel* summary_;
  std::thread worker_;
  std::shared_ptr<std::atomic<bool>> cancelled_;
  std::atomic<bool> finished_{true};
};

}  // namespace kiln::viewer
