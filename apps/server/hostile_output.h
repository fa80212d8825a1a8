// A hostile model, for tests only (`tova serve --debug-hostile-output SEED`; off by default, and
// the server says so at start when it is on): every piece of text a sequence generates is
// replaced, after sampling, by bytes chosen to break what reads a model's output: ill-formed
// UTF-8 (lone continuation bytes, truncated characters, surrogates, overlong forms, bytes above
// U+10FFFF), the markers of every tool-call and reasoning format whole, half written, nested and
// unclosed, JSON fragments, well-formed calls with broken bytes in them, and now and then a huge
// argument. Everything downstream of the sampler runs as for a real model: stop strings and
// limits (on the real text), reasoning splitting, tool-call parsing, streaming, n > 1, the
// codec, the access log. The pieces depend only on (seed, stream, step), so a failure
// reproduces. tests/server/hostile_model_test.cpp drives the same generator through the
// server's turn and codec functions; tests/server/client/hostile_test.mjs through HTTP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tova::server {

// The text of piece `step` (0, 1, ...) of stream `stream` (the server: the request's sampling
// seed plus the choice's index). Piece 0 is a whole turn, number `stream` mod
// hostile_turn_count(): turn 0 is issue 49's reproducer (a Qwen3-Coder call whose parameter
// value is "1" and three 0xFF bytes), the others a call of each format (and reasoning blocks)
// with broken bytes inside. Later pieces are drawn from (seed, stream, step).
std::string hostile_piece(uint64_t seed, uint64_t stream, int64_t step);
size_t hostile_turn_count();

}  // namespace tova::server
