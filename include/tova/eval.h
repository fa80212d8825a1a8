// Evaluations as one library call each, so the CLI, Python and any other front-end get the same
// records: perplexity sweeps (chunked or streaming), RULER-style task grids, eviction traces,
// llama-bench-style speed tests, batched decode throughput under a K/V memory budget, and the
// logits of every position. Each takes a loaded Engine (const: it runs its own sequences and
// holds the engine's pool while it does) and returns plain records; tables, files and plots are
// the front-end's (apps/plot draws the plots from these records). The library never prints.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tova/engine.h"
#include "tova/kv_format.h"
#include "tova/options.h"
#include "tova/policy_spec.h"
#include "tova/position_mode.h"
#include "tova/result.h"

namespace tova::eval {

// ---- Perplexity (tova ppl) --------------------------------------------------------------------
// The input (text, tokenized without BOS and cut into chunks of ctx tokens, BOS first; or token
// ids as given), the configurations (every policy at every budget), and either chunked scoring
// (all configurations in shared forward passes) or streaming (the whole text as ONE sequence per
// configuration and position mode, windows of positions). Every prediction of a chunk is scored
// (ctx - 1 per chunk), unlike llama-perplexity, which scores only the second half of each chunk.

struct SweepProgress {
  int64_t steps_done = 0;  // token steps fed, summed over configurations
  int64_t steps_total = 0;
  double seconds = 0;
};

struct ConfigResult {
  kv::PolicySpec policy;
  KvFormat kv_type;
  double mean_nll = 0;
  double ppl = 0;
  double ppl_se = 0;  // delta method over per-chunk means; NaN with one chunk
  // Against `full` (only when it is in the sweep; in the first format when there are several):
  // mean and 99th percentile over predictions of KL(p_full || p_config), and the share of
  // predictions with the same argmax.
  std::optional<double> kl_mean, kl_p99, top1_agree;
  // Paired against `full` on the same chunks: the mean over chunks of (this configuration's
  // mean NLL - full's) and its standard error (sd of the differences / sqrt(chunks); NaN with
  // one chunk). The chunks' difficulty, which both share, cancels out.
  std::optional<double> dnll_mean, dnll_se;
  std::vector<double> nll_by_position;  // [ctx - 1], mean over chunks
  std::vector<double> nll_by_chunk;     // [n_chunks], mean over the chunk's predictions
  std::vector<double> token_nll;        // [n_chunks][ctx - 1], if keep_token_nll
};

struct SweepResult {
  int ctx = 0;
  int n_chunks = 0;
  int64_t n_predictions = 0;  // per configuration: n_chunks * (ctx - 1)
  int64_t n_forward_calls = 0;
  // (configuration, chunk, position) steps that rode along with the chunk's largest
  // configuration instead of being computed (SweepOptions::share_prefix).
  int64_t n_shared_steps = 0;
  double seconds = 0;
  std::vector<ConfigResult> configs;  // in SweepOptions::configs order (x kv_types)
  bool several_kv_types = false;      // configurations differ in their K/V format
  // "tova k=64" or, with several formats, "tova k=64 q8_0"; the policy's label alone for `full`.
  std::string name(const ConfigResult& c) const;
};


struct StreamCurve {
  std::string label;  // "tova k=512 gap", "full"
  kv::PolicySpec policy;
  kv::PositionMode positions = kv::PositionMode::kAbsolute;
  int64_t n_predictions = 0;
  double ppl = 0;  // over every prediction scored
  // Window w covers predictions [w * window, min((w + 1) * window, n)) of the sequence, i.e.
  // the predictions of positions 1 .. ; window_end[w] is its last position (exclusive end).
  std::vector<int64_t> window_end;
  std::vector<double> window_ppl;
  std::vector<double> cumulative_ppl;  // over predictions [0, window_end[w])
};


struct PplOptions {
  // The input: `text` (tokenized without BOS; chunks start with BOS) or `tokens` (used as
  // given) when it is not empty. The labels name them in the records ("text" / "tokens_file").
  std::string text;
  std::vector<int32_t> tokens;
  std::string text_label;
  std::string tokens_label;
  std::string model_label;  // "model" in the records; empty: the engine's path
  std::vector<std::string> policies;
  std::vector<int> budgets;
  int ctx = 0;     // tokens per chunk, BOS included (0: the training context, or 512); --stream:
                   // the most tokens read (0: all)
  int chunks = 0;  // the first M chunks (0: all)
  // K/V storage formats (empty: f32). Several (chunked only): every configuration runs in each,
  // and KL / top-1 compare with `full` in the first (SweepOptions::kv_types).
  std::vector<kv::KvFormat> kv_types;
  // One mode, or (streaming only) several: every bounded configuration runs in each.
  std::vector<kv::PositionMode> positions = {kv::PositionMode::kAbsolute};
  int n_batch = 32;
  bool batched = true;
  bool share_prefix = true;
  bool stream = false;
  int window = 1024;     // --stream: positions per window
  int max_full_ctx = 0;  // --stream: `full` over the first N tokens (0: 4x the training context)
  // --stream: the context the model was really trained on, for the plot's line and
  // max_full_ctx's default (0: the GGUF's context_length)
  int trained_ctx = 0;
  bool f32_activations = false;  // recorded in the header (the engine was loaded with it)
  std::function<void(const SweepProgress&)> on_progress;
};

struct PplReport {
  bool stream = false;
  std::string title;    // "MODEL on TEXT: ctx 1024, 3 chunks" / "MODEL streaming TEXT: ..."
  SweepResult sweep;    // chunked
  std::vector<StreamCurve> curves;  // streaming
  int64_t n_tokens = 0;
  int64_t trained_ctx = 0;  // streaming: the trained context used (for the plot's line)
  int64_t n_forward_calls = 0;
  double sweep_seconds = 0;
  nlohmann::ordered_json json;  // results.json
  std::string csv;              // results.csv
};


Result<PplReport> run_ppl(const Engine& engine, const PplOptions& o);

// ---- Tasks (tova eval) ------------------------------------------------------------------------
// RULER's synthetic tasks (and llama.cpp's passkey) under many (policy, budget) configurations,
// every answer generated greedily through the library's one generation loop (TextStream).

struct EvalProgress {
  int64_t steps_done = 0;  // token steps fed (prompt and generated), over every configuration
  int64_t steps_total = 0;  // an upper bound: every answer taking its max_new tokens
  double seconds = 0;
};

struct EvalRecord {
  // The sample
  std::string task;
  int length = 0;        // requested length
  int prompt_tokens = 0;
  int depth = -1;        // percent, -1: the task has none
  int sample = 0;
  uint64_t prompt_hash = 0;
  int64_t needle_token = -1;
  // The configuration
  std::string policy;  // label, "snapkv:16"
  int budget = -1;     // -1: unbounded
  std::string prefill;
  std::string positions;
  // The answer
  std::string answer;  // the generated text (until the score was settled, EOS or max_new)
  std::vector<std::string> expected;
  double score = 0;     // RULER's string_match_all: the share of expected strings in the answer
  bool correct = false;  // score == 1
  int n_generated = 0;
  // The turn of the conversation (1-based) and how many the sample has (1: single-turn).
  int turn = 1;
  int n_turns = 1;
  // The teacher-forced NLL of the expected answer's tokens after this turn's prompt, under this
  // configuration's state (nats per token, mean over answer_tokens tokens): computed on a copy
  // of the state, so the generated answer is not affected.
  double answer_nll = 0;
  int answer_tokens = 0;
  // Tokens the policy's scoring passes processed for this turn (kvzip: the reconstruction at
  // the prompt's end, or at the previous turn's end), beside the prompt and the answer.
  int64_t pass_tokens = 0;
};

struct EvalResult {
  std::vector<EvalRecord> records;  // by sample (in SampleSet order), then configuration
  int64_t n_forward_calls = 0;
  int64_t token_steps = 0;   // (sequence, token) steps computed
  int64_t shared_steps = 0;  // steps that rode along with a leader instead
  int64_t nll_steps = 0;     // teacher-forced answer tokens fed on copies (answer NLL)
  int64_t pass_steps = 0;    // tokens fed by scoring passes (kvzip's reconstructions)
  double seconds = 0;
};


struct TaskRunOptions {
  std::vector<std::string> tasks;
  // A needle template (JSON, eval/task_text.h) replacing RULER's phrasing when not empty;
  // template_label names it in errors and the records.
  std::string template_text;
  std::string template_label;
  // The haystack's text (default: RULER's noise sentences); haystack_label names it.
  std::string haystack_text;
  std::string haystack_label;
  std::vector<int> lengths;  // empty: the model's trained context
  std::vector<int> depths = {0, 25, 50, 75, 100};
  int samples = 10;
  uint64_t seed = 42;
  std::vector<std::string> policies = {"full"};
  std::vector<int> budgets;
  std::string prefill = "exact";
  std::string positions = "absolute";
  std::string kv_type = "f32";
  bool chat = false;          // wrap prompts in the model's chat template
  std::string chat_template;  // a named template (implies chat)
  int max_new = 0;            // 0: each task's own
  // Questions asked of each context in successive turns of one conversation (niah_multikey,
  // vt); 1: single-turn, RULER's form.
  int turns = 1;
  int n_batch = 32;
  bool batched = true;
  bool share_prefix = true;
  std::string model_label;  // "model" in the records; empty: the engine's path
  // Each warning as soon as it is known (before the grid runs); also in the report.
  std::function<void(const std::string&)> on_warning;
  std::function<void(const EvalProgress&)> on_progress;
};

struct TaskReport {
  std::string title;  // "MODEL: 10 samples per cell, seed 42"
  EvalResult result;
  size_t n_samples = 0;
  size_t n_configs = 0;
  std::vector<std::string> warnings;
  nlohmann::ordered_json json;  // results.json
  std::string csv;              // results.csv
};


Result<TaskReport> run_tasks(const Engine& engine, const TaskRunOptions& o);

// The task registry as a front-end shows it: every name with its one-line help.
struct TaskDescription {
  std::string name;
  std::string help;
  bool uses_depth = false;  // a needle placed at depths
  int max_new = 0;          // tokens generated per answer
};
std::vector<TaskDescription> describe_tasks();
std::string task_choices();  // "niah_single_1, niah_single_2, ..."

// One cell of a table: the mean score of the records of (task, length, policy, budget).
struct AccuracyCell {
  std::string task;
  int length = 0;
  std::string policy;
  int budget = -1;  // -1: unbounded
  int n = 0;        // samples (over every depth)
  double accuracy = 0;  // mean RULER score, 0..1
};

// Conversations (records with n_turns > 1): the mean score per (task, length, policy, budget,
// turn), in the same order, turns ascending.
struct TurnCell {
  std::string task;
  int length = 0;
  std::string policy;
  int budget = -1;
  int turn = 1;
  int n = 0;
  double accuracy = 0;
};

// The answers' NLL per (task, length, policy, budget), pooled over turns: its mean, and the
// mean of its paired difference against `full` (the same sample and turn) with the standard
// error of that mean (NaN where the grid has no `full` or fewer than two pairs).
struct NllCell {
  std::string task;
  int length = 0;
  std::string policy;
  int budget = -1;
  int n = 0;
  double nll = 0;         // mean answer NLL, nats per token
  double delta = NAN;     // mean (nll - full's nll) over the pairs
  double delta_se = NAN;  // its paired standard error
  int n_pairs = 0;
};


// The grid's axes as the records hold them (the tables here and a front-end's plots read them
// alike): tasks and configurations in first-seen order (`full` first), lengths and depths
// ascending.
struct GridConfig {
  std::string policy;
  int budget = -1;  // -1: unbounded
  bool operator==(const GridConfig&) const = default;
};
std::vector<std::string> grid_tasks(const std::vector<EvalRecord>& records);
std::vector<GridConfig> grid_configs(const std::vector<EvalRecord>& records,
                                     const std::string& task);
std::vector<int> grid_lengths(const std::vector<EvalRecord>& records, const std::string& task);
std::vector<int> grid_depths(const std::vector<EvalRecord>& records, const std::string& task);

// In the records' order of first appearance (tasks, then configurations), lengths ascending.
std::vector<AccuracyCell> accuracy_cells(const std::vector<EvalRecord>& records);
std::vector<TurnCell> turn_cells(const std::vector<EvalRecord>& records);
std::vector<NllCell> nll_cells(const std::vector<EvalRecord>& records);
// A markdown table per task: rows (policy, k), columns lengths, cells accuracy in percent.
// Conversations add a table of accuracy per turn (full's row is the ceiling); every grid adds
// the answers' NLL table.
std::string accuracy_markdown(const std::vector<EvalRecord>& records);

// ---- Traces (tova trace) ----------------------------------------------------------------------
// Which tokens a policy keeps: one sequence fed token by token, recording for every layer, KV
// head and position how long the token stayed in the multi-state. Survival of the token at
// position p: the number of later tokens whose attention included it (e - p if the policy
// evicted it at step e, after that step's attention; T - 1 - p if it is alive at the end).

struct TraceOptions {
  kv::PolicySpec policy;
  KvFormat kv_type;  // K/V storage (f32 unless given)
  kv::PositionMode positions = kv::PositionMode::kAbsolute;
  // Age (t - pos) from which a held state counts as "far" in TraceResult::far_share, e.g. the
  // model's training context; 0: not computed.
  int64_t far_age = 0;
  std::function<void(int64_t done, int64_t total)> on_progress;  // tokens fed
};

struct TraceResult {
  std::string policy;  // label, e.g. "sink:4"
  int budget = -1;     // -1: unbounded
  int n_layer = 0;
  int n_head_kv = 0;
  int64_t n_tokens = 0;  // T
  std::vector<int32_t> tokens;
  // [n_layer][n_head_kv][T]. Layer-wise policies give every KV head of a layer the same row.
  std::vector<int32_t> survival;
  std::vector<uint8_t> alive_at_end;
  std::vector<double> layer_survival;        // [n_layer][T], mean over KV heads
  std::vector<double> mean_survival;         // [T], mean over layers of layer_survival
  std::vector<double> first_token_survival;  // [n_layer], position 0, mean over KV heads
  // Share of the held states that are among the k/2 most recent positions (t - k/2 < pos <= t)
  // after step t, averaged over KV heads and over the steps t >= k (the steps that evict).
  // NaN (here and in mean_age, far_share) when unbounded or when no step evicted.
  std::vector<double> recent_share;  // [n_layer]
  // Per layer over every (KV head, position) the policy evicted (alive-at-end tokens are left
  // out: their survival is cut short by the end of the text). NaN when nothing was evicted.
  std::vector<double> survival_median;  // [n_layer]
  std::vector<double> survival_p90;     // [n_layer]
  // Per layer over every (KV head, position): the share evicted at their own step (survival 0)
  // and the share that survived at least 2k later tokens (alive-at-end ones included).
  std::vector<double> evicted_on_arrival;  // [n_layer]
  std::vector<double> kept_over_2k;        // [n_layer]
  double recent_share_mean = 0;            // over layers
  // Over the same steps and KV heads: the mean age t - pos of the held states, and the share of
  // held states at least TraceOptions::far_age old (NaN if far_age is 0).
  std::vector<double> mean_age;   // [n_layer]
  std::vector<double> far_share;  // [n_layer]
  double seconds = 0;

  size_t index(int layer, int head_kv, int64_t pos) const {
    return (static_cast<size_t>(layer) * n_head_kv + head_kv) * n_tokens + pos;
  }
};

// Token strings ranked by their mean survival (over layers, heads and occurrences), longest
// first; ties by more occurrences, then by text.
struct TokenSurvival {
  std::string text;
  double mean_survival = 0;
  int count = 0;
};


struct EvictionComparison {
  std::vector<double> differ;   // [n_layer]; NaN where neither run evicted
  std::vector<double> overlap;  // [n_layer]; NaN where the reference never evicted
  // [n_layer]: the first step at which some KV head's evictions differ; -1: never.
  std::vector<int64_t> first_difference;
  double differ_mean = 0;   // over layers (and KV heads, pooled)
  double overlap_mean = 0;  // over layers
};

// What `tova trace` reports: a trace, and the same trace in each other K/V format with its
// evictions compared to the first.
struct TraceRun {
  TraceResult trace;
  std::vector<KvFormat> compared;                // the other formats
  std::vector<EvictionComparison> comparisons;  // [compared.size()]
};


struct TraceRunOptions {
  // The input: `text` (BOS + its tokens) or `tokens` (fed as given) when it is not empty; the
  // labels name them in the records and the title.
  std::string text;
  std::vector<int32_t> tokens;
  std::string text_label;
  std::string tokens_label;
  std::string model_label;  // empty: the engine's path
  CacheOptions cache;       // policy, K/V type and positions; the prefill must be exact
  int ctx = 0;              // tokens fed at most (0: the training context, or 512)
  int64_t far_age = 0;      // TraceOptions::far_age (0: the training context)
  int top = 20;             // token strings kept longest to report
  std::vector<KvFormat> compare;  // trace again in each and compare the evictions
  bool f32_activations = false;   // recorded in the header (the engine was loaded with it)
  std::function<void(int64_t done, int64_t total)> on_progress;  // tokens fed
};

struct TraceReport {
  std::string title;  // "MODEL on TEXT: tova, k = 64, 512 tokens"
  TraceRun run;
  int ctx = 0;
  int64_t far_age = 0;
  std::vector<TokenSurvival> longest;  // the `top` token strings kept longest
  nlohmann::ordered_json json;         // trace.json
};

Result<TraceReport> run_trace(const Engine& engine, const TraceRunOptions& o);

// ---- Speed (tova bench) -----------------------------------------------------------------------
// Speed tests in the spirit of llama-bench, so the two engines can be compared on the same
// files: prompt processing (pp: n_prompt tokens in micro-batches) and decoding (tg: n_gen tokens
// one at a time), each after an untimed prefill of n_depth tokens, repeated and summarised as
// mean and standard deviation of tokens per second.

// One test: exactly one of n_prompt (pp) and n_gen (tg) is positive.
struct BenchCase {
  int n_prompt = 0;
  int n_gen = 0;
  int n_depth = 0;  // tokens fed (untimed) before the test, in a fresh state each repetition
  int n_threads = 1;
  CacheOptions cache;

  std::string name() const;        // "pp512", "tg128 @ d4096"
  std::string cache_label() const;  // "full", "tova k=512", "window k=512 chunk:64"
};

struct BenchProgress {
  int index = 0;    // of the case, from 0
  int n_cases = 0;
  std::string name;  // BenchCase::name()
  std::string phase;  // "warmup" | "depth" | "run"
  int repetition = 0;  // from 0 ("run" and "depth" only)
};

struct BenchOptions {
  // Every combination is one pp case per n_prompt and one tg case per n_gen (0 entries skip).
  std::vector<int> n_prompt = {512};
  std::vector<int> n_gen = {128};
  std::vector<int> n_depth = {0};
  std::vector<int> n_threads = {2};
  std::vector<CacheOptions> caches = {CacheOptions{}};  // no policy name: full
  int n_batch = 512;    // prompt tokens per forward pass (exact prefill)
  int repetitions = 5;
  bool warmup = true;   // one untimed run first (a whole pp, or one tg token), as llama-bench
  uint64_t seed = 1234;  // for the random token ids
  std::function<void(const BenchProgress&)> on_progress;  // optional
};

struct BenchModelInfo {
  std::string filename;     // as given
  std::string arch;         // "llama"
  std::string size_label;   // "1.1B", "135M"
  std::string weight_type;  // the layers' main weight type, upper case: "Q4_0"
  std::string model_type;   // "llama 1.1B Q4_0", llama-bench's model column
  uint64_t n_bytes = 0;     // all tensor data
  uint64_t n_params = 0;
  // Weight bytes one decode step reads: every layer matrix plus the output matrix (the token
  // embedding contributes one row).
  uint64_t decode_weight_bytes = 0;
};

struct BenchResult {
  BenchCase test;
  BenchModelInfo model;
  int n_batch = 0;
  std::vector<double> samples_ns;  // one per repetition
  std::vector<double> samples_ts;  // tokens per second, one per repetition
  double avg_ns = 0, stddev_ns = 0;
  double avg_ts = 0, stddev_ts = 0;
  uint64_t kv_bytes = 0;  // K/V memory of the state after the last repetition
  // tg only: bytes read per decoded token (weights + the K/V held at the end of the test,
  // which bounds the average from above) and the bandwidth that implies at avg_ts.
  uint64_t read_bytes_per_token = 0;
  double read_gbps = 0;
};


// The cases of `o` in the order they run: caches, then threads, then depths, then pp before tg.
std::vector<BenchCase> bench_cases(const BenchOptions& o);
BenchModelInfo describe_model(const Engine& engine, const std::string& filename);
// Runs every case of `o` on the engine's model; the first error stops the run.
Result<std::vector<BenchResult>> run_bench(const Engine& engine, const std::string& filename,
                                           const BenchOptions& o);

// ---- Throughput (tova throughput) -------------------------------------------------------------
// Aggregate decode throughput of as many sequences as a K/V memory budget holds, per policy and
// K/V type: a bounded policy's fixed state lets more sequences share the memory than `full`.

struct ThroughputProgress {
  int index = 0;  // of the configuration, from 0
  int n_configs = 0;
  std::string label;  // "tova k=512"
  std::string phase;  // "fill" | "copy" | "warmup" | "run"
  int batch = 0;
};

struct ThroughputOptions {
  // K/V bytes for all sequences together. 0: full_batch times one `full` sequence at ctx in the
  // first of kv_types.
  uint64_t kv_memory = 0;
  int full_batch = 0;
  int ctx = 4096;        // tokens every sequence has seen when the measurement starts
  int n_steps = 16;      // decode steps per measured window (each step: one token per sequence)
  int repetitions = 3;   // measured windows
  int warmup_steps = 2;  // untimed steps first
  int n_batch = 512;     // prefill micro-batch (exact semantics whatever its size)
  int batch_cap = 0;     // >0: run at most this many sequences (the max batch is still reported)
  // Storage types: every policy runs in each (rows per type, in this order within a policy).
  std::vector<KvFormat> kv_types = {KvFormat(KvType::kF16)};
  std::vector<kv::PolicySpec> policies;  // `full` first is customary; any order works
  uint64_t seed = 1234;
  std::function<void(const ThroughputProgress&)> on_progress;  // optional
};

struct ThroughputResult {
  std::string policy;  // "tova", "full"
  int budget = -1;     // -1: unbounded
  std::string kv_type;  // KvFormat::label(): "f16", "q8_0"
  int ctx = 0;
  uint64_t bytes_per_seq = 0;   // K/V (and position) memory one sequence allocated
  int max_batch = 0;            // floor(kv_memory / bytes_per_seq)
  int batch = 0;                // sequences that decoded together (max_batch unless capped)
  uint64_t kv_bytes_total = 0;  // what the batch allocated, summed over its sequences
  // Resident memory the process gained while the copies were made (batch - 1 sequences):
  // the allocation is real memory, not a promise. -1 when /proc is unavailable.
  int64_t rss_copies_bytes = -1;
  std::vector<double> samples_ts;  // aggregate tokens/s, one per measured window
  double avg_ts = 0, stddev_ts = 0;
  double step_ms = 0;   // mean time of one step over the measured windows
  // avg_ts / avg_ts of `full` in the first storage type (or of the first configuration).
  double relative = 0;
  // Bytes one step reads: the weights once, plus every held state of every sequence.
  uint64_t read_bytes_per_step = 0;
  double read_gbps = 0;  // read_bytes_per_step / step time
};

struct ThroughputReport {
  uint64_t kv_memory = 0;  // the budget used (computed from full_batch if that was given)
  int ctx = 0;
  std::vector<ThroughputResult> results;
};


Result<ThroughputReport> run_throughput(const Engine& engine, const ThroughputOptions& o);
// A JSON array with one object per configuration: policy, budget (null for unbounded), ctx,
// kv_memory, bytes_per_seq, max_batch, batch, kv_bytes_total, rss_copies_bytes, avg_ts,
// stddev_ts, samples_ts, step_ms, relative, read_bytes_per_step, read_gbps, plus `header`'s
// fields (model, threads, ...) in every object.
nlohmann::ordered_json throughput_json(const ThroughputReport& r,
                                       const nlohmann::ordered_json& header);
// A bounded configuration whose state (bytes_per_seq) is larger than the full cache's at the
// same ctx (k >= ctx when the report has no full): it saves nothing, and is flagged in the JSON
// and left out of the plot (named under it).
bool larger_than_full(const ThroughputReport& r, const ThroughputResult& c);

// ---- Logits (tova logits) ---------------------------------------------------------------------
// The logits after every position of ids ([ids.size()][n_vocab]), fed under `cache` in
// micro-batches of n_batch (exact prefill): what golden tests compare with other engines.
Result<std::vector<float>> all_logits(const Engine& engine, std::span<const int32_t> ids,
                                      const CacheOptions& cache, int n_batch);

// ---- Inputs -----------------------------------------------------------------------------------
// Token id lists given as files (--tokens of `tova ppl` / `tova trace`): a JSON list of ids, or
// an object whose "tokens" member is that list. Every element must be an integer in
// [0, INT32_MAX]; whether an id fits the vocabulary is the caller's check (it knows the model).
// `source` (a path) prefixes error messages.
Result<std::vector<int32_t>> parse_token_list(std::string_view text, std::string_view source);

}  // namespace tova::eval
