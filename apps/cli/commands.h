// The subcommands of the tova program; each file adds one.
#pragma once

#include <CLI/CLI.hpp>

#include "runtime/sequence.h"

namespace tova::cli {

void add_run_command(CLI::App& app);
void add_logits_command(CLI::App& app);
void add_ppl_command(CLI::App& app);
void add_trace_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_make_random_command(CLI::App& app);
void add_throughput_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_chat_command(CLI::App& app);

void print_run_stats(double load_seconds, const runtime::GenerateStats& st);
void print_kv_stats(const runtime::KvStats& kv);

}  // namespace tova::cli
