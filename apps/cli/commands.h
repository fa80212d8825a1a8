// The subcommands of the tova program; each file adds one.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "tova/session.h"
#include "tova/text_stream.h"

namespace tova::cli {

void add_run_command(CLI::App& app);
void add_logits_command(CLI::App& app);
void add_ppl_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_trace_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_make_random_command(CLI::App& app);
void add_encode_image_command(CLI::App& app);
void add_throughput_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_template_command(CLI::App& app);

// What `tova run` reports on stderr after the text.
struct RunReport {
  double load_seconds = 0;
  uint64_t weight_bytes = 0;  // what a forward pass streams
  uint64_t mtp_bytes = 0;     // the multi-token prediction blocks' (not run by the main pass)
  int n_mtp_blocks = 0;
  StreamStats stream;
  std::string finish;  // "stop" | "length"
  double session_load_seconds = 0;
  uint64_t session_loaded_bytes = 0;
  double session_save_seconds = 0;
  uint64_t session_saved_bytes = 0;
  SessionStats kv;
};
void print_run_report(const RunReport& r);
void print_kv_stats(const SessionStats& kv);

}  // namespace tova::cli
