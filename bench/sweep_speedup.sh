#!/bin/bash
# The batching speed-up of `tova ppl` (docs/RESULTS.md, "Speed"): the same 30-configuration
# sweep run batched (default), batched without prefix sharing, one configuration per forward
# call, and one configuration token by token; 1 and 2 threads. Prints seconds per run.
# Usage: bench/sweep_speedup.sh [TOVA_BINARY] [SHARED_DIR] [REPETITIONS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
T=${1:-$here/build/bin/tova}
S=${2:-$here/../shared}
reps=${3:-2}
P=window,sink:4,h2o,tova,h2o-head,tova-head

seconds() {  # the sweep time tova reports on stderr
  "$T" ppl "$@" --no-plot 2>&1 >/dev/null | sed -n 's/^scored .* in \([0-9.]*\) s .*/\1/p'
}

printf '%-12s %-8s %-18s %s\n' sweep threads mode seconds
for rep in $(seq "$reps"); do
  for t in 1 2; do
    for mode in "" "--no-share" "--no-batch" "--no-batch -b 1"; do
      # shellcheck disable=SC2086  # mode is a list of flags
      printf '%-12s %-8s %-18s %s\n' stories260K "$t" "[${mode}]" "$(seconds \
        -m "$S/models/stories260K.gguf" -f "$S/texts/tinystories-val-1000.txt" --ctx 512 \
        --chunks 4 --policies $P --budgets 16,32,64,128,256 -t "$t" $mode)"
      # shellcheck disable=SC2086
      printf '%-12s %-8s %-18s %s\n' booklm-3m "$t" "[${mode}]" "$(seconds \
        -m "$S/models/booklm-3m.gguf" -f "$S/texts/pg19-test-10146.txt" --ctx 1024 \
        --chunks 1 --policies $P --budgets 32,64,128,256,512 -t "$t" $mode)"
    done
  done
done
