// kiln [PATH] [--screenshot FILE.png] [--quit]
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QScreen>
#include <QTimer>

#include <cstdio>

#include "app/gui/main_window.h"
#include "app/version.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("kiln");
  QApplication::setApplicationVersion(kiln::version_string());
  QCommandLineParser parser;
  parser.setApplicationDescription("Kiln: a workbench for debugging tensor-graph compilers");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("path", "what to open (an op corpus folder); default: the reference corpus");
  QCommandLineOption screenshot("screenshot", "save a picture of the window when loading is done", "file.png");
  QCommandLineOption quit("quit", "exit when loading is done (with --screenshot: after saving it)");
  parser.addOption(screenshot);
  parser.addOption(quit);
  parser.process(app);

  QString path;
  if (!parser.positionalArguments().isEmpty()) {
    path = parser.positionalArguments().first();
  } else {
    QByteArray ref = qgetenv("KILN_REFERENCE_DIR");
    path = (ref.isEmpty() ? QString(KILN_DEFAULT_REFERENCE_DIR) : QString::fromLocal8Bit(ref)) + "/opcorpus";
  }

  kiln::MainWindow window;
  window.show();
  QObject::connect(&window, &kiln::MainWindow::runFinished, &app, [&] {
    if (parser.isSet(screenshot)) {
      QString file = parser.value(screenshot);
      if (!window.grab().save(file)) {
        std::fprintf(stderr, "kiln: cannot write screenshot %s\n", qPrintable(file));
        QApplication::exit(3);
        return;
      }
    }
    if (parser.isSet(quit)) QApplication::quit();
  });
  window.openCorpus(QDir(path).absolutePath());
  return QApplication::exec();
}
