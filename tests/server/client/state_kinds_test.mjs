// Memory by layer kind through `tova serve` on the gemma3 fixture (five sliding-window layers
// of window 16, one global layer): every response's tova.memory_by_kind has the window kind
// within its window and the bounded kind within the request's budget (unbounded under full),
// streamed too; /metrics reports bytes and rows by kind.
// Usage: node state_kinds_test.mjs BUILD_DIR GEMMA3.gguf     (exit 0: all passed)
import assert from 'node:assert/strict';
import { check, finish, startServer, stopServer, metrics, waitFor } from './lib.mjs';

const s = await startServer([]);
const prompt = Array.from({ length: 60 }, (_, i) => 1 + (i * 7) % 200);

async function complete(body) {
  const r = await fetch(`${s.url}/v1/completions`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: 30, ignore_eos: true, temperature: 0, ...body }) });
  assert.equal(r.status, 200);
  if (!body.stream) return (await r.json()).tova;
  let tova = null;
  for (const line of (await r.text()).split('\n')) {
    if (!line.startsWith('data: {')) continue;
    const chunk = JSON.parse(line.slice(6));
    if (chunk.tova) tova = chunk.tova;
  }
  return tova;
}

function kinds(tova) {
  const by = Object.fromEntries(tova.memory_by_kind.map((k) => [k.kind, k]));
  assert.deepEqual(tova.layer_kinds, ['window', 'window', 'window', 'window', 'window', 'bounded']);
  assert.equal(by.window.layers, 5);
  assert.equal(by.window.limit, 16);
  assert.ok(by.window.max_held > 0 && by.window.max_held <= 16, JSON.stringify(by.window));
  assert.equal(by.bounded.layers, 1);
  assert.equal(by.window.bytes + by.bounded.bytes, tova.kv_bytes);
  return by;
}

await check('bounded by the budget, window by the window (tova k=12, h2o k=40), streamed too',
  async () => {
    for (const [policy, budget] of [['tova', 12], ['h2o', 40]]) {
      for (const stream of [false, true]) {
        const by = kinds(await complete({ kv_policy: policy, kv_budget: budget, stream,
          cache_prompt: false }));
        assert.equal(by.bounded.limit, budget);
        assert.equal(by.bounded.max_held, budget);
        assert.ok(by.bounded.rows >= budget);
      }
    }
  });

await check('under full the bounded kind holds everything, the window kind its window', async () => {
  const by = kinds(await complete({ kv_policy: 'full', cache_prompt: false }));
  assert.equal(by.bounded.limit, null);
  assert.equal(by.bounded.max_held, 60 + 29);
  assert.ok(by.window.max_held <= 16);
});

await check('/metrics: state bytes and rows by kind', async () => {
  await complete({ kv_policy: 'tova', kv_budget: 12 });  // its state stays held
  assert.ok(await waitFor(async () => (await metrics(s.url)).text.includes('kind="window"')));
  const m = await metrics(s.url);
  for (const kind of ['bounded', 'window']) {
    for (const name of ['tova_state_bytes', 'tova_state_held_bytes', 'tova_state_rows']) {
      const v = new RegExp(`^${name}\\{kind="${kind}"\\} (\\S+)$`, 'm').exec(m.text);
      assert.ok(v && Number(v[1]) > 0, `${name}{kind="${kind}"}`);
    }
  }
});

await stopServer(s);
finish('state kind checks');
