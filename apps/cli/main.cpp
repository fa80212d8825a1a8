// tova: bounded-memory LLM inference. Printing and exit codes live here and in the command
// files; the library only returns results and errors.
#include <CLI/CLI.hpp>

#include "commands.h"
#include "common.h"

int main(int argc, char** argv) {
  CLI::App app{
      "tova: run GGUF language models with a bounded KV cache (multi-state compression as in "
      "\"Transformers are Multi-State RNNs\")",
      "tova"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every command");
  tova::cli::add_run_command(app);
  tova::cli::add_logits_command(app);
  try {
    app.parse(argc, argv);
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
