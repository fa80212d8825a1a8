// The gaps between a streamed request's tokens: one streaming completion against an
// OpenAI-compatible server (loopback), a prompt of P token ids, G generated (ignore_eos), and
// per gap between consecutive text chunks its length. Prints the median, the 99th percentile,
// the largest gap and where the five largest fell (the token index). A cache that grows by
// copying inside the decode shows as single gaps many times the median at the tokens where it
// crossed its allocation (256, 512, 1024, ... slots in tova before 2f1368f).
//
// node bench/serve_gaps.mjs --url http://127.0.0.1:8080 --prompt 100 --gen 4000 \
//     [--kv-policy full] [--json]
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  const next = all[i + 1];
  if (a.startsWith('--')) acc.push([a.slice(2), next === undefined || next.startsWith('--') ? true : next]);
  return acc;
}, []));
const url = args.url ?? 'http://127.0.0.1:8080';
const nPrompt = Number(args.prompt ?? 100);
const nGen = Number(args.gen ?? 4000);
const body = {prompt: Array.from({length: nPrompt}, (_, i) => 100 + (i * 7) % 200),
              max_tokens: nGen, temperature: 0, stream: true, ignore_eos: true};
if (args['kv-policy']) body.kv_policy = args['kv-policy'];
if (args['kv-budget']) body.kv_budget = Number(args['kv-budget']);

const r = await fetch(`${url}/v1/completions`, {
  method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)});
if (r.status !== 200) throw new Error(`status ${r.status}: ${await r.text()}`);
const times = [];
let buf = '';
const decoder = new TextDecoder();
for await (const chunk of r.body) {
  buf += decoder.decode(chunk, {stream: true});
  let nl;
  while ((nl = buf.indexOf('\n\n')) >= 0) {
    const event = buf.slice(0, nl);
    buf = buf.slice(nl + 2);
    if (event.startsWith('data: ') && !event.startsWith('data: [DONE]')) {
      const j = JSON.parse(event.slice(6));
      if (j.choices && j.choices.length && j.choices[0].text !== undefined) times.push(performance.now());
    }
  }
}
const gaps = times.slice(1).map((t, i) => ({ms: t - times[i], token: i + 1}));
const sorted = gaps.map(g => g.ms).sort((a, b) => a - b);
const pct = p => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
const top = [...gaps].sort((a, b) => b.ms - a.ms).slice(0, 5);
const out = {chunks: times.length, median_ms: pct(0.5), p99_ms: pct(0.99), max_ms: sorted.at(-1),
             max_over_median: sorted.at(-1) / pct(0.5),
             largest: top.map(g => ({token: nPrompt + g.token, ms: Number(g.ms.toFixed(2))}))};
if (args.json) {
  console.log(JSON.stringify(out));
} else {
  console.log(`${out.chunks} chunks: median ${out.median_ms.toFixed(2)} ms, p99 ${out.p99_ms.toFixed(2)} ms, ` +
              `max ${out.max_ms.toFixed(2)} ms (${out.max_over_median.toFixed(1)}x the median)`);
  console.log('largest gaps (position in the sequence, ms): ' +
              out.largest.map(g => `${g.token}: ${g.ms}`).join(', '));
}
