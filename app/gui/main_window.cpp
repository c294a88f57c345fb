#include "app/gui/main_window.h"

#include <QAction>
#include <QFileDialog>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMetaObject>
#include <QProgressBar>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTableView>
#include <QVBoxLayout>

#include "core/corpus/conformance.h"
#include "viewer/case_result_model.h"

namespace kiln {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("Kiln");
  resize(1100, 700);
  model_ = new CaseResultModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setFilterKeyColumn(-1);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);

  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  filter_ = new QLineEdit(central);
  filter_->setPlaceholderText("Filter by case, op, status or reason");
  connect(filter_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);
  table_ = new QTableView(central);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  layout->addWidget(filter_);
  layout->addWidget(table_);
  setCentralWidget(central);

  summary_ = new QLabel(this);
  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(240);
  progress_->hide();
  cancel_ = new QPushButton("Cancel", this);
  cancel_->hide();
  connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancelRun);
  statusBar()->addWidget(summary_, 1);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);

  QMenu* file = menuBar()->addMenu("&File");
  QAction* open = file->addAction("&Open op corpus...");
  open->setShortcut(QKeySequence::Open);
  connect(open, &QAction::triggered, this, [this] {
    QString dir = QFileDialog::getExistingDirectory(this, "Open op corpus folder");
    if (!dir.isEmpty()) openCorpus(dir);
  });
  QAction* quit = file->addAction("&Quit");
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);
}

MainWindow::~MainWindow() {
  cancelRun();
  joinWorker();
}

void MainWindow::cancelRun() {
  if (cancelled_) cancelled_->store(true);
}

void MainWindow::joinWorker() {
  if (worker_.joinable()) worker_.join();
}

void MainWindow::openCorpus(const QString& dir) {
  cancelRun();
  joinWorker();  // a newer request replaces the running one
  model_->clear();
  setWindowTitle("Kiln — " + dir);
  summary_->setText("Loading " + dir + " ...");
  progress_->setValue(0);
  progress_->show();
  cancel_->show();
  finished_ = false;
  cancelled_ = std::make_shared<std::atomic<bool>>(false);
  auto cancelled = cancelled_;
  std::string path = dir.toStdString();
  worker_ = std::thread([this, cancelled, path] {
    auto corpus = load_corpus(path);
    if (!corpus) {
      QString msg = QString::fromStdString(corpus.status().to_string());
      QMetaObject::invokeMethod(this, [this, msg] { onRunEnded(msg); }, Qt::QueuedConnection);
      return;
    }
    ConformanceBackend backend = eager_backend();
    int total = int(corpus->cases.size()), done = 0;
    for (const CorpusCase& c : corpus->cases) {
      if (cancelled->load()) break;
      CaseResult r = run_case(c, backend);
      ++done;
      QMetaObject::invokeMethod(this, [this, r, done, total] { onCaseDone(r, done, total); },
                                Qt::QueuedConnection);
    }
    QMetaObject::invokeMethod(this, [this] { onRunEnded({}); }, Qt::QueuedConnection);
  });
}

void MainWindow::onCaseDone(const CaseResult& r, int done, int total) {
  model_->append(r);
  progress_->setMaximum(total);
  progress_->setValue(done);
  summary_->setText(QString("%1 / %2 cases run").arg(done).arg(total));
}

void MainWindow::onRunEnded(const QString& error) {
  finished_ = true;
  progress_->hide();
  cancel_->hide();
  table_->resizeColumnsToContents();
  if (!error.isEmpty()) {
    summary_->setText("Error: " + error);
  } else {
    summary_->setText(QString("%1 passed, %2 failed, %3 skipped%4")
                          .arg(model_->count(CaseStatus::Pass))
                          .arg(model_->count(CaseStatus::Fail))
                          .arg(model_->count(CaseStatus::Skip))
                          .arg(cancelled_ && cancelled_->load() ? " (cancelled)" : ""));
  }
  emit runFinished();
}

}  // namespace kiln
