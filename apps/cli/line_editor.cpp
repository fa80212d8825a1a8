#include "line_editor.h"

#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>

namespace tova::cli {

namespace {

constexpr char kCtrlA = 1, kCtrlB = 2, kCtrlC = 3, kCtrlD = 4, kCtrlE = 5, kCtrlF = 6, kCtrlH = 8,
               kCtrlK = 11, kCtrlL = 12, kCtrlN = 14, kCtrlP = 16, kCtrlU = 21, kCtrlW = 23,
               kEsc = 27, kBackspace = 127;

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Code points in s[from, to): the columns they take (one each; wide characters are rare here).
size_t columns(const std::string& s, size_t from, size_t to) {
  size_t n = 0;
  for (size_t i = from; i < to; ++i) n += !is_continuation(s[i]);
  return n;
}

void out(const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, s.data() + done, s.size() - done);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return;
    }
    done += static_cast<size_t>(n);
  }
}

// The code point boundaries after and before `at`.
size_t next_boundary(const std::string& s, size_t at) {
  if (at >= s.size()) return s.size();
  ++at;
  while (at < s.size() && is_continuation(s[at])) ++at;
  return at;
}
size_t prev_boundary(const std::string& s, size_t at) {
  if (at == 0) return 0;
  --at;
  while (at > 0 && is_continuation(s[at])) --at;
  return at;
}

// One byte of input; false at end of input or on an error.
bool get(char& c) {
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, &c, 1);
    if (n == 1) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

// Raw mode for the duration of one read: bytes as typed, no echo, Ctrl-C as a byte.
class RawMode {
 public:
  RawMode() {
    if (::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_iflag &= ~static_cast<tcflag_t>(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    ok_ = ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0;
  }
  ~RawMode() {
    if (ok_) ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_);
  }
  bool ok() const { return ok_; }

 private:
  termios saved_{};
  bool ok_ = false;
};

}  // namespace

LineEditor::LineEditor() : tty_(::isatty(STDIN_FILENO) != 0 && ::isatty(STDOUT_FILENO) != 0) {}

void LineEditor::add_history(const std::string& line) {
  if (!line.empty() && (history_.empty() || history_.back() != line)) history_.push_back(line);
}

LineEditor::Read LineEditor::read(const std::string& prompt, std::string& line) {
  line.clear();
  if (tty_) return read_tty(prompt, line);
  std::fputs(prompt.c_str(), stdout);
  std::fflush(stdout);
  if (std::getline(std::cin, line)) return Read::kLine;
  // A SIGINT interrupts the read (the handler is installed without SA_RESTART).
  return errno == EINTR ? Read::kInterrupted : Read::kEnd;
}

namespace {

// The line being edited: its text, the cursor, and where in the history it is.
struct Editing {
  std::string& line;
  const std::vector<std::string>& history;
  size_t cursor = 0;  // a byte offset on a code point boundary
  size_t browse;      // history.size(): the line being typed
  std::string typed;  // that line, while browsing the history

  Editing(std::string& l, const std::vector<std::string>& h)
      : line(l), history(h), browse(h.size()) {}

  void refresh(const std::string& prompt) const {
    std::string s = "\r" + prompt + line + "\x1b[K\r";
    const size_t col = columns(prompt, 0, prompt.size()) + columns(line, 0, cursor);
    if (col > 0) s += "\x1b[" + std::to_string(col) + "C";
    out(s);
  }
  void show_history(size_t to) {
    if (browse == history.size()) typed = line;
    browse = to;
    line = browse == history.size() ? typed : history[browse];
    cursor = line.size();
  }
  void erase_next() { line.erase(cursor, next_boundary(line, cursor) - cursor); }

  // A key that edits the line or moves in it (every key but Enter, Ctrl-C and Ctrl-D on an
  // empty line, which end the read).
  void key(char c) {
    switch (c) {
      case kCtrlD:
        erase_next();
        break;
      case kBackspace:
      case kCtrlH: {
        const size_t begin = prev_boundary(line, cursor);
        line.erase(begin, cursor - begin);
        cursor = begin;
        break;
      }
      case kCtrlA:
        cursor = 0;
        break;
      case kCtrlE:
        cursor = line.size();
        break;
      case kCtrlB:
        cursor = prev_boundary(line, cursor);
        break;
      case kCtrlF:
        cursor = next_boundary(line, cursor);
        break;
      case kCtrlU:
        line.erase(0, cursor);
        cursor = 0;
        break;
      case kCtrlK:
        line.erase(cursor);
        break;
      case kCtrlW: {
        size_t begin = cursor;
        while (begin > 0 && line[begin - 1] == ' ') --begin;
        while (begin > 0 && line[begin - 1] != ' ') --begin;
        line.erase(begin, cursor - begin);
        cursor = begin;
        break;
      }
      case kCtrlL:
        out("\x1b[H\x1b[2J");
        break;
      case kCtrlP:
        if (browse > 0) show_history(browse - 1);
        break;
      case kCtrlN:
        if (browse < history.size()) show_history(browse + 1);
        break;
      case kEsc:
        escape();
        break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') {
          line.insert(cursor, 1, c == '\t' ? ' ' : c);
          ++cursor;
        }
        break;
    }
  }

  // After ESC: CSI (ESC [ params final) and SS3 (ESC O final) sequences: arrows, Home, End,
  // Delete; anything else (function keys, ...) is read and ignored.
  void escape() {
    char a = 0, b = 0;
    if (!get(a)) return;
    if (a != '[' && a != 'O') return;
    std::string params;
    for (;;) {
      if (!get(b)) break;
      if (b >= 0x40 && b <= 0x7E) break;
      params += b;
    }
    if (b == 'A' && browse > 0) {
      show_history(browse - 1);
    } else if (b == 'B' && browse < history.size()) {
      show_history(browse + 1);
    } else if (b == 'C') {
      cursor = next_boundary(line, cursor);
    } else if (b == 'D') {
      cursor = prev_boundary(line, cursor);
    } else if (b == 'H' || (b == '~' && (params == "1" || params == "7"))) {
      cursor = 0;
    } else if (b == 'F' || (b == '~' && (params == "4" || params == "8"))) {
      cursor = line.size();
    } else if (b == '~' && params == "3") {
      erase_next();
    }
  }
};

}  // namespace

LineEditor::Read LineEditor::read_tty(const std::string& prompt, std::string& line) {
  std::fflush(stdout);
  RawMode raw;
  if (!raw.ok()) {
    tty_ = false;
    return read(prompt, line);
  }
  Editing e(line, history_);
  e.refresh(prompt);
  for (;;) {
    char c = 0;
    if (!get(c)) {
      out("\r\n");
      return Read::kEnd;
    }
    if (c == '\r' || c == '\n') {
      out("\r\n");
      return Read::kLine;
    }
    if (c == kCtrlC) {
      out("^C\r\n");
      return Read::kInterrupted;
    }
    if (c == kCtrlD && line.empty()) {
      out("\r\n");
      return Read::kEnd;
    }
    e.key(c);
    e.refresh(prompt);
  }
}

}  // namespace tova::cli
