// Machine-readable and plotted forms of a throughput report (eval/throughput.h). The markdown
// table is the front-end's business.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/result.h"
#include "eval/throughput.h"

namespace tova::eval {

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

// gnuplot script: relative decode throughput (left axis) and max batch (right axis) against
// the multi-state size k on a log2 axis, `full` at k = ctx; writes throughput.png and .svg.
std::string throughput_plot_script(const ThroughputReport& r, const std::string& title);
// Writes dir/throughput.gp and runs it.
Status plot_throughput(const ThroughputReport& r, const std::string& title, const std::string& dir);

}  // namespace tova::eval
