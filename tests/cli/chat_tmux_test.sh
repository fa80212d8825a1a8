#!/usr/bin/env bash
# tova chat in a real terminal (tmux): /help lists the commands; an unknown /command is refused,
# not sent to the model; the line editor edits (Left inserts inside the line) and recalls
# (Up) what was typed; Ctrl-C during an answer stops it and the prompt comes back; Ctrl-C at
# the prompt quits (exit 0) with the conversation saved, the stopped answer included.
# Usage: chat_tmux_test.sh PATH/TO/tova     (exit 77: tmux is not installed, skipped)
set -euo pipefail
tova=$1
if ! command -v tmux >/dev/null 2>&1; then
  echo "tmux not found: skipped (scripts/setup.sh installs it)"
  [ "${CI:-}" = true ] && { echo "CI=true: a failure, not a skip"; exit 1; }
  exit 77
fi
dir=$(mktemp -d)
sock="$dir/tmux.sock"
cleanup() {
  tmux -S "$sock" kill-server 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

fail() {
  echo "FAILED: $1"
  echo "--- screen:"
  tmux -S "$sock" capture-pane -p -J -t chat 2>/dev/null || true
  echo "--- stderr:"
  cat "$dir/err" 2>/dev/null || true
  exit 1
}
# -J joins the lines the terminal wrapped, so a word that straddles the right edge still matches
# (and keeps trailing blanks, which sed drops).
screen() { tmux -S "$sock" capture-pane -p -J -t chat | sed 's/ *$//'; }
# Waits until the screen matches an extended regular expression.
wait_for() {
  for _ in $(seq 1 300); do
    if screen | grep -Eq -- "$1"; then return 0; fi
    sleep 0.1
  done
  fail "waited 30 s for: $1"
}
keys() { tmux -S "$sock" send-keys -t chat "$@"; }

# An answer that never ends on its own (bounded state, end of generation ignored): only Ctrl-C
# stops it.
tmux -S "$sock" new-session -d -s chat -x 160 -y 40 \
  "'$tova' chat -t 1 --temp 0 -n 1000000 --ignore-eos --kv-policy tova --kv-budget 16 \
     --chat-template chatml --session '$dir/chat.bin' 2>'$dir/err'; echo \"exit=\$?\" >'$dir/exit'; sleep 60"
wait_for '^> ?$'

keys -l "/help"
keys Enter
wait_for '^/reset'
wait_for '^/quit, /exit'

keys -l "/bogus now"
keys Enter
wait_for '^unknown command /bogus \(not sent to the model'

# "helo", Left, "l": the editor inserts inside the line.
keys -l "helo"
keys Left
keys -l "l"
wait_for '^> hello$'
keys Enter
# The answer streams until Ctrl-C.
sleep 1
lines_before=$(screen | grep -c . || true)
keys C-c
wait_for '\[stopped\]$'
wait_for '^> ?$'

# Up recalls the last line typed; Ctrl-U clears it.
keys Up
wait_for '^> hello$'
keys C-u
wait_for '^> ?$'

# Ctrl-C at the prompt quits.
keys C-c
for _ in $(seq 1 100); do
  [ -s "$dir/exit" ] && break
  sleep 0.1
done
[ -s "$dir/exit" ] || fail "tova chat did not quit on Ctrl-C at the prompt"
grep -qx 'exit=0' "$dir/exit" || fail "tova chat exited with $(cat "$dir/exit")"
# The conversation was saved after the stopped answer: the user message "hello" (edited) and
# an assistant message.
grep -aq '"content":"hello","role":"user"' "$dir/chat.bin" || fail "no user message 'hello' saved"
grep -aq '"role":"assistant"' "$dir/chat.bin" || fail "no assistant message saved"
! grep -aq 'bogus' "$dir/chat.bin" || fail "/bogus reached the conversation"
echo "chat in a terminal: /help, unknown command refused, line editing, history, Ctrl-C: ok ($lines_before lines of answer)"
