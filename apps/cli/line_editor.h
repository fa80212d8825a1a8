// Reading a line at a terminal the way shells do: left/right, Home/End (Ctrl-A/E), Backspace
// and Delete, Ctrl-U/K/W, up/down through the lines entered before (history), Ctrl-L; Ctrl-C
// and Ctrl-D end the input. The terminal is in raw mode only while a line is read, so Ctrl-C
// outside (during an answer) is a signal as usual. Input that is not a terminal (a pipe, a
// file) is read line by line, prompt printed, nothing else.
#pragma once

#include <string>
#include <vector>

namespace tova::cli {

class LineEditor {
 public:
  enum class Read {
    kLine,         // a line (without its newline)
    kEnd,          // end of input (Ctrl-D on an empty line, end of file, an error)
    kInterrupted,  // Ctrl-C (or SIGINT while a pipe was read)
  };
  LineEditor();
  Read read(const std::string& prompt, std::string& line);
  void add_history(const std::string& line);
  bool interactive() const { return tty_; }

 private:
  Read read_tty(const std::string& prompt, std::string& line);
  bool tty_ = false;
  std::vector<std::string> history_;
};

}  // namespace tova::cli
