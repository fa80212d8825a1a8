// Running the built tova binary from tests: exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "test_data.h"

namespace tova::testing {

struct CmdResult {
  int code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `tova ARGS` (ARGS already shell-quoted by the caller) with `input` on its stdin.
inline CmdResult run_tova(const std::string& args, const std::string& input = "") {
  const std::string dir = make_temp_dir();
  std::ofstream(dir + "/in") << input;
  const std::string cmd =
      binary_dir() + "/bin/tova " + args + " >" + dir + "/out 2>" + dir + "/err <" + dir + "/in";
  const int st = std::system(cmd.c_str());
  CmdResult r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(dir + "/out");
  r.err = slurp(dir + "/err");
  std::system(("rm -rf " + dir).c_str());
  return r;
}

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace tova::testing

// A failed command: non-zero exit, exactly one stderr line "tova: error: ..." holding `needle`.
#define EXPECT_ONE_LINE_ERROR(r, needle)                            \
  do {                                                              \
    EXPECT_NE((r).code, 0);                                         \
    EXPECT_EQ((r).err.rfind("tova: error: ", 0), 0u) << (r).err;    \
    EXPECT_EQ(::tova::testing::count_lines((r).err), 1) << (r).err; \
    EXPECT_NE((r).err.find(needle), std::string::npos) << (r).err;  \
  } while (0)
