// Load generator for `tova serve` (or any OpenAI-compatible server, e.g. llama-server):
// C concurrent streaming clients, each sending completions with a prompt of P tokens and
// generating G, for R requests per concurrency level. Reports aggregate generated tokens/s and
// time to first token p50/p99. Needs only node (>= 18, built-in fetch).
//
// node bench/serve_load.mjs --url http://127.0.0.1:8080 --concurrency 1,8,64 --prompt 256 \
//     --gen 128 --requests 64 [--kv-policy tova --kv-budget 256] [--json]
// --requests is per concurrency level unless --requests-per-client N is given (then N * C).
// Generated tokens are counted from the final usage when the server sends one, else one per
// streamed text chunk. "decode tok/s/stream" is a request's (tokens - 1) over the time from its
// first to its last token (median over requests).
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  const next = all[i + 1];
  if (a.startsWith('--')) acc.push([a.slice(2), next === undefined || next.startsWith('--') ? true : next]);
  return acc;
}, []));
const url = args.url ?? 'http://127.0.0.1:8080';
const levels = String(args.concurrency ?? '1,8,64').split(',').map(Number);
const nPrompt = Number(args.prompt ?? 256);
const nGen = Number(args.gen ?? 128);
const nRequests = Number(args.requests ?? 64);
const extra = {};
if (args['kv-policy']) extra.kv_policy = args['kv-policy'];
if (args['kv-budget']) extra.kv_budget = Number(args['kv-budget']);

// A prompt of exactly nPrompt token ids (ids 100.. cycling), so every server sees the same
// length whatever its tokenizer does with text.
const prompt = Array.from({length: nPrompt}, (_, i) => 100 + (i * 7) % 200);

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN;
}

// --api openai (default): POST /v1/completions. --api llama-native: llama-server's own
// POST /completion, with the byte tokens <0x00>..<0xFF> (ids 3..258 of Llama-2-style vocabularies)
// banned by logit_bias: llama-server runs generated text through a chat-format parser that
// aborts the stream with a 500 when a random-weight model emits a lone byte (not UTF-8), on
// both endpoints. Speed does not depend on which tokens come out (ignore_eos, fixed length).
const native = args.api === 'llama-native';
const bannedBytes = Array.from({length: 256}, (_, i) => [3 + i, false]);

async function one() {
  const t0 = performance.now();
  const body = native ? {prompt, n_predict: nGen, temperature: 0, stream: true, ignore_eos: true,
                         cache_prompt: false, logit_bias: bannedBytes}
                      : {prompt, max_tokens: nGen, temperature: 0, stream: true,
                         stream_options: {include_usage: true}, ignore_eos: true, ...extra};
  const r = await fetch(`${url}${native ? '/completion' : '/v1/completions'}`, {
    method: 'POST',
    headers: {'Content-Type': 'application/json'},
    body: JSON.stringify(body)
  });
  if (r.status !== 200) throw new Error(`status ${r.status}: ${await r.text()}`);
  let ttft = NaN;
  let tokens = 0;
  let chunks = 0;
  let tLast = NaN;
  let buf = '';
  for await (const chunk of r.body) {
    buf += Buffer.from(chunk).toString();
    let at;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, at);
      buf = buf.slice(at + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const j = JSON.parse(ev.slice(6));
      if (j.error) throw new Error(`stream error: ${JSON.stringify(j.error)}`);
      const text = native ? (j.content ?? '') : (j.choices?.[0]?.text ?? j.choices?.[0]?.delta?.content ?? '');
      if (text.length > 0) {
        if (Number.isNaN(ttft)) ttft = performance.now() - t0;
        tLast = performance.now() - t0;
        chunks++;
      }
      if (j.usage) tokens = j.usage.completion_tokens;
      if (native && j.stop) tokens = j.tokens_predicted ?? j.timings?.predicted_n ?? tokens;
    }
  }
  if (tokens === 0) tokens = chunks;
  const decode = tokens > 1 && tLast > ttft ? (tokens - 1) / ((tLast - ttft) / 1000) : NaN;
  return {ttft, tokens, decode};
}

const rows = [];
for (const c of levels) {
  let next = 0;
  const results = [];
  const t0 = performance.now();
  const total = args['requests-per-client'] ? Number(args['requests-per-client']) * c : nRequests;
  await Promise.all(Array.from({length: c}, async () => {
    while (next < total) {
      next++;
      results.push(await one());
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  const tokens = results.reduce((a, r) => a + r.tokens, 0);
  rows.push({
    concurrency: c,
    requests: results.length,
    tokens,
    seconds,
    tok_per_s: tokens / seconds,
    ttft_p50_ms: pct(results.map((r) => r.ttft), 0.5),
    ttft_p99_ms: pct(results.map((r) => r.ttft), 0.99),
    decode_tok_per_s_per_stream: pct(results.map((r) => r.decode), 0.5)
  });
}
if (args.json) {
  console.log(JSON.stringify(rows, null, 2));
} else {
  console.log(
      '| concurrency | requests | gen tokens | seconds | tok/s | TTFT p50 ms | TTFT p99 ms | ' +
      'decode tok/s/stream |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
        `| ${r.concurrency} | ${r.requests} | ${r.tokens} | ${r.seconds.toFixed(2)} | ` +
        `${r.tok_per_s.toFixed(1)} | ${r.ttft_p50_ms.toFixed(1)} | ${r.ttft_p99_ms.toFixed(1)} | ` +
        `${r.decode_tok_per_s_per_stream.toFixed(1)} |`);
  }
}
