#pragma once
// A generated Python-subset program as lines that can be left out one by one,
// so a failing program can be reduced statement by statement (delta
// debugging, as the minifier does with graph nodes).
#include <cstddef>
#include <string>
#include <vector>

namespace kiln::fuzz {

struct Line {
  int indent = 0;          // in levels of four spaces
  std::string text;
  bool removable = true;   // block headers (class, def, for, if, with) stay
};

struct ProgramText {
  std::vector<Line> lines;

  // Indices of the lines a reduction may drop.
  std::vector<size_t> removable() const;
  // The program with only the removable lines in `kept` (sorted indices);
  // every other removable line is left out, and a block left empty gets
  // `pass`. `kept` null keeps everything.
  std::string render(const std::vector<size_t>* kept = nullptr) const;
};

// Appends lines at a growing indentation.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(ProgramText& out) : out_(out) {}
  void line(const std::string& text, bool removable = true) { out_.lines.push_back({depth_, text, removable}); }
  // A header (`def f(x):`) that stays; the lines after it, until close(), are its body.
  void open(const std::string& header) {
    out_.lines.push_back({depth_, header, false});
    ++depth_;
  }
  void close() { --depth_; }
  // Another builder's lines, nested at the current indentation.
  void nest(const ProgramText& body) {
    for (Line l : body.lines) {
      l.indent += depth_;
      out_.lines.push_back(std::move(l));
    }
  }
  void blank() { out_.lines.push_back({0, "", false}); }

 private:
  ProgramText& out_;
  int depth_ = 0;
};

}  // namespace kiln::fuzz
