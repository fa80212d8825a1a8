// Evaluations as one library call each, so the CLI, Python and any other front-end get the same
// records: perplexity sweeps (chunked or streaming), RULER-style task grids, eviction traces,
// llama-bench-style speed tests, batched decode throughput under a K/V memory budget, and the
// logits of every position. Each takes a loaded Engine (const: it runs its own sequences and
// holds the engine's pool while it does) and returns plain records; tables, files and plots are
// the front-end's (apps/plot draws the plots from these records). The library never prints.
#pragma once

#include "tova/eval/bench.h"
#include "tova/eval/logits.h"
#include "tova/eval/ppl.h"
#include "tova/eval/tasks.h"
#include "tova/eval/throughput.h"
#include "tova/eval/token_list.h"
#include "tova/eval/trace.h"
