# Sourced by bench/eval_grid_speed.sh and bench/eval_grid_profile.sh: the grid both measure
# (niah_single on niah-13m, 4 policies x 3 budgets) from their arguments
# TOVA_BINARY SHARED_DIR SAMPLES THREADS: sets T, S, n, t, P, B and common (the flags every
# command of either side takes).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
T=${1:-$here/build/bin/tova}
S=${2:-$here/../shared}
n=${3:-4}
t=${4:-2}
P=(window h2o tova snapkv)
B=(128 256 512)
common=(niah_single -m "$S/models/niah-13m-f16.gguf" --template "$S/models/niah-13m.templates.json"
        --lengths 2048 --samples "$n" -t "$t" --no-plot)
