#include "viewer/corpus_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMetaObject>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "core/corpus/conformance.h"
#include "core/corpus/corpus.h"
#include "viewer/case_result_model.h"

namespace kiln::viewer {

CorpusPanel::CorpusPanel(QWidget* parent) : QWidget(parent) {
  model_ = new CaseResultModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setFilterKeyColumn(-1);
  proxy_->setSortRole(CaseResultModel::SortRole);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  summary_ = new QLabel("Open an op corpus folder (File > Open) to compare Kiln's eager kernels with PyTorch.", this);
  filter_ = new QLineEdit(this);
  filter_->setPlaceholderText("Filter by case, op, status or reason");
  connect(filter_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);
  table_ = new QTableView(this);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->setWordWrap(false);
  layout->addWidget(summary_);
  layout->addWidget(filter_);
  layout->addWidget(table_);
}

CorpusPanel::~CorpusPanel() {
  cancel();
  join();
}

void CorpusPanel::cancel() {
  if (cancelled_) cancelled_->store(true);
}

void CorpusPanel::join() {
  if (worker_.joinable()) worker_.join();
}

void CorpusPanel::openCorpus(const QString& dir) {
  cancel();
  join();  // a newer request replaces the running one
  model_->clear();
  summary_->setText("Loading " + dir + " ...");
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
      QMetaObject::invokeMethod(this, [this, r, done, total] { onCaseDone(r, done, total); }, Qt::QueuedConnection);
    }
    QMetaObject::invokeMethod(this, [this] { onRunEnded({}); }, Qt::QueuedConnection);
  });
}

void CorpusPanel::onCaseDone(const CaseResult& r, int done, int total) {
  model_->append(r);
  summary_->setText(QString("%1 / %2 cases run").arg(done).arg(total));
  emit progress(done, total);
}

void CorpusPanel::onRunEnded(const QString& error) {
  finished_ = true;
  table_->resizeColumnsToContents();
  table_->horizontalHeader()->setSectionResizeMode(CaseResultModel::Reason, QHeaderView::Stretch);
  QString text = !error.isEmpty() ? "Error: " + error
                                  : QString("%1 passed, %2 failed, %3 skipped%4")
                                        .arg(model_->count(CaseStatus::Pass))
                                        .arg(model_->count(CaseStatus::Fail))
                                        .arg(model_->count(CaseStatus::Skip))
                                        .arg(cancelled_ && cancelled_->load() ? " (cancelled)" : "");
  summary_->setText(text);
  emit runFinished(text);
}

}  // namespace kiln::viewer
