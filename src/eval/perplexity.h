// `tova ppl` as one library call, so the CLI and Python get the same records: the input (text,
// tokenized without BOS and cut into chunks of ctx tokens, BOS first; or token ids as given),
// the configurations (every policy at every budget), and either chunked scoring (all
// configurations in shared forward passes, ppl_sweep.h) or streaming (the whole text as ONE
// sequence per configuration and position mode, windows of positions, stream_report.h). The
// result carries results.json and results.csv as the files hold them; tables and plots are
// the front-end's.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/result.h"
#include "tova/eval/ppl.h"
#include "eval/ppl_sweep.h"
#include "eval/stream_report.h"
#include "tova/engine.h"

namespace tova::eval {

Result<PplReport> run_ppl(const Engine& engine, const PplOptions& o);

}  // namespace tova::eval
