// tova: bounded-memory LLM inference. Printing and exit codes live here and in the command
// files; the library only returns results and errors.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "common.h"
#include "tova/simd_target.h"

namespace {

// --simd on every command (also TOVA_SIMD): applied while the flags are parsed, before the
// command runs; the library names the targets this CPU supports when the choice is not one.
void add_simd_flag(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands({})) {
    sub->add_option_function<std::string>(
           "--simd",
           [](const std::string& name) {
             const tova::Status st = tova::kernels::set_simd_target(name);
             if (!st.ok()) throw CLI::ValidationError("--simd", st.message());
           },
           "SIMD target of the kernels: avx3_dl, avx3, avx2, sse4, scalar, ... (default: the "
           "best this CPU runs; also TOVA_SIMD)");
  }
}

// The valid commands, comma-separated, if `word` is not one of them; empty if it is.
std::string unknown_command(const CLI::App& app, std::string_view word) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == word) return "";
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return names;
}

// The arguments with llama.cpp's spellings and the old ones replaced by the one name each.
std::vector<std::string> expand_aliases(int argc, char** argv) {
  // llama.cpp's multi-letter short flags, which CLI11 cannot declare (a single dash takes one
  // letter): -ngl and -fa on every command (GPU flags, accepted with a note), -ctk and -ctv
  // (--cache-type-k, --cache-type-v) and llama-server's `tova serve -np N` (--parallel N) and
  // `-ub N` (--ubatch-size N). Then the spellings older releases used, kept for one release
  // and left out of --help (docs/CLI.md lists them): the same option under its one name.
  struct Alias {
    const char* command;  // nullptr: every command
    const char* flag;
    const char* long_flag;
  };
  static constexpr Alias kAliases[] = {
      {nullptr, "-ngl", "--gpu-layers"},
      {nullptr, "-fa", "--flash-attn"},
      {nullptr, "-ctk", "--cache-type-k"},
      {nullptr, "-ctv", "--cache-type-v"},
      {"run", "-md", "--spec-draft-model"},
      {"chat", "-md", "--spec-draft-model"},
      {"serve", "-np", "--parallel"},
      {"serve", "-ub", "--ubatch-size"},
      // Old spellings (0.1).
      {nullptr, "--kv-type-k", "--cache-type-k"},
      {nullptr, "--kv-type-v", "--cache-type-v"},
      {"serve", "--ctx", "--ctx-size"},
      {"serve", "--step-tokens", "--ubatch-size"},
      {"ppl", "--ctx", "--ctx-size"},
      {"ppl", "--policies", "--kv-policy"},
      {"ppl", "--budgets", "--kv-budget"},
      {"ppl", "--batch", "--batch-size"},
      {"eval", "--policies", "--kv-policy"},
      {"eval", "--budgets", "--kv-budget"},
      {"eval", "--batch", "--batch-size"},
      {"throughput", "--ctx", "--ctx-size"},
      {"trace", "--ctx", "--ctx-size"},
  };
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 2; i < args.size(); ++i) {
    for (const Alias& a : kAliases) {
      if (a.command != nullptr && args[1] != a.command) continue;
      const std::string_view flag = a.flag;
      if (args[i] == flag) {
        args[i] = a.long_flag;
      } else if (flag.starts_with("--") && args[i].size() > flag.size() &&
                 args[i].compare(0, flag.size(), flag) == 0 && args[i][flag.size()] == '=') {
        args[i] = a.long_flag + args[i].substr(flag.size());  // --ctx=64
      }
    }
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "tova: run GGUF language models with a bounded KV cache (multi-state compression as in "
      "\"Transformers are Multi-State RNNs\")",
      "tova"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every command");
  tova::cli::add_run_command(app);
  tova::cli::add_logits_command(app);
  tova::cli::add_ppl_command(app);
  tova::cli::add_eval_command(app);
  tova::cli::add_trace_command(app);
  tova::cli::add_bench_command(app);
  tova::cli::add_make_random_command(app);
  tova::cli::add_encode_image_command(app);
  tova::cli::add_throughput_command(app);
  tova::cli::add_serve_command(app);
  tova::cli::add_chat_command(app);
  tova::cli::add_template_command(app);
  // TOVA_SIMD is applied first, so that a --simd flag overrides it (CLI11's envname applied the
  // variable after the flag of the command that ran, so the variable won).
  if (const char* env = std::getenv("TOVA_SIMD"); env != nullptr && *env != '\0') {
    const tova::Status st = tova::kernels::set_simd_target(env);
    if (!st.ok()) return tova::cli::fail("TOVA_SIMD: " + st.message());
  }
  add_simd_flag(app);
  // A first word that is neither a flag nor a command: name it and the valid commands.
  if (argc > 1 && argv[1][0] != '-') {
    if (const std::string valid = unknown_command(app, argv[1]); !valid.empty()) {
      return tova::cli::fail("unknown command '" + std::string(argv[1]) + "' (valid: " + valid +
                             ")");
    }
  }
  std::vector<std::string> args = expand_aliases(argc, argv);
  std::vector<char*> argp;
  for (std::string& a : args) argp.push_back(a.data());
  try {
    app.parse(static_cast<int>(argp.size()), argp.data());
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // the command printed its one-line error already
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return tova::cli::fail(e.what());
  }
  return 0;
}
