// Speculative decoding through `tova serve` (issue 50), on the qwen35-mtp fixture (Gated
// DeltaNet and attention layers, a multi-token prediction block) with the real Qwen3.5
// template, under tova k=16 and full: a server with --spec-type draft-mtp answers every greedy
// request as a server without speculation does, through 8 chat turns that continue from the
// checkpoints held at each turn boundary (state store, prefix reuse, turn checkpoints read a
// settled multi-state), with n = 2 choices (clones), streamed, and with llama-server's
// per-request fields (speculative.type, .n_max, .n_min, .p_min, .ngram_size_n). Drafted and
// accepted counts appear in the responses' timings (draft_n, draft_n_accepted) and in /metrics;
// bad speculative fields are 400s naming the field.
// Usage: node spec_test.mjs BUILD_DIR QWEN35-MTP.gguf QWEN3.5-TEMPLATE.jinja  (exit 0: passed)
import { existsSync } from 'node:fs';
import assert from 'node:assert/strict';
import { check, finish, startServer, stopServer, metrics, cannotRun } from './lib.mjs';

const templatePath = process.argv[4];
if (!existsSync(templatePath)) {
  cannotRun(`${templatePath} not found (set TOVA_SHARED_DIR): skipped`);
}
const kwargs = { enable_thinking: false };

async function post(url, path, body) {
  const r = await fetch(`${url}${path}`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, text, json: () => JSON.parse(text) };
}

async function ok(url, path, body) {
  const r = await post(url, path, body);
  assert.equal(r.status, 200, r.text);
  return r.json();
}

for (const [policy, budget] of [['tova', 16], ['full', 0]]) {
  const cache = policy === 'full' ? ['--kv-policy', 'full']
    : ['--kv-policy', policy, '--kv-budget', String(budget)];
  const plain = await startServer([...cache, '--kv-memory', '64M'], { chatTemplate: templatePath });
  const spec = await startServer([...cache, '--kv-memory', '64M', '--spec-type', 'draft-mtp',
    '--spec-draft-n-max', '3', '--spec-draft-p-min', '0'], { chatTemplate: templatePath });
  const label = `${policy}${budget ? ` k=${budget}` : ''}`;
  let drafted = 0;
  await check(`8 chat turns under ${label}: draft-mtp answers equal plain ones, each turn ` +
    'continues from a checkpoint, drafts are counted', async () => {
    const messages = [{ role: 'system', content: 'You are a helpful assistant.' }];
    for (let turn = 0; turn < 8; turn++) {
      messages.push({ role: 'user', content: `Question ${turn}: what comes after ${turn * 3}?` });
      const body = { messages, max_tokens: 10, temperature: 0, chat_template_kwargs: kwargs };
      const a = await ok(plain.url, '/v1/chat/completions', body);
      const b = await ok(spec.url, '/v1/chat/completions', body);
      assert.equal(b.choices[0].message.content, a.choices[0].message.content, `turn ${turn}`);
      if (turn > 0) assert.ok(b.usage.prompt_tokens_details.cached_tokens > 0, `turn ${turn}`);
      assert.equal(b.timings.predicted_n, a.timings.predicted_n);
      assert.equal(a.timings.draft_n, undefined);
      if (b.timings.draft_n !== undefined) {
        assert.ok(b.timings.draft_n_accepted <= b.timings.draft_n);
        drafted += b.timings.draft_n;
      }
      messages.push({ role: 'assistant', content: a.choices[0].message.content });
    }
    assert.ok(drafted > 0, 'draft-mtp drafted');
  });
  await check(`per request under ${label}: n = 2, streamed, ngram-simple, none: the plain text`,
    async () => {
      const prompt = 'one two three one two three one two three one two';
      const body = { prompt, max_tokens: 24, temperature: 0 };
      const want = (await ok(plain.url, '/v1/completions', body)).choices[0].text;
      const two = await ok(spec.url, '/v1/completions', { ...body, n: 2 });
      assert.deepEqual(two.choices.map((c) => c.text), [want, want]);
      for (const extra of [{ 'speculative.type': 'ngram-simple', 'speculative.n_max': 2,
        'speculative.ngram_size_n': 2, 'speculative.ngram_size_m': 4 },
      { 'speculative.n_max': 1, 'speculative.n_min': 1, 'speculative.p_min': 0.5 },
      { 'speculative.type': 'none' }]) {
        const r = await ok(spec.url, '/v1/completions', { ...body, ...extra });
        assert.equal(r.choices[0].text, want, JSON.stringify(extra));
        if (extra['speculative.type'] === 'none') assert.equal(r.timings.draft_n, undefined);
      }
      const s = await fetch(`${spec.url}/v1/completions`, { method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ ...body, stream: true }) });
      const events = (await s.text()).split('\n').filter((l) => l.startsWith('data: {'))
        .map((l) => JSON.parse(l.slice(6)));
      assert.equal(events.map((e) => e.choices[0]?.text ?? '').join(''), want);
      const last = events.filter((e) => e.timings).pop();
      assert.ok(last && last.timings.draft_n > 0, JSON.stringify(last));
    });
  await check(`/metrics under ${label}: drafted and accepted tokens`, async () => {
    const m = await metrics(spec.url);
    assert.ok(m.get('tova_draft_tokens_total') >= drafted);
    assert.ok(m.get('tova_draft_tokens_accepted_total') <= m.get('tova_draft_tokens_total'));
    assert.equal((await metrics(plain.url)).get('tova_draft_tokens_total'), 0);
  });
  if (budget) {
    await check('bad speculative fields: 400s naming the field', async () => {
      for (const [extra, param] of [[{ 'speculative.n_max': 0 }, 'speculative.n_max'],
        [{ 'speculative.n_max': 4, 'speculative.n_min': 5 }, 'speculative.n_min'],
        [{ 'speculative.p_min': 2 }, 'speculative.p_min'],
        [{ 'speculative.type': 'lookahead' }, 'speculative.type'],
        [{ speculative: { n_max: 4 } }, 'speculative']]) {
        const r = await post(spec.url, '/v1/completions', { prompt: 'hi', max_tokens: 2, ...extra });
        assert.equal(r.status, 400, r.text);
        assert.equal(r.json().error.param, param, r.text);
      }
      const r = await post(spec.url, '/v1/completions',
        { prompt: 'hi', max_tokens: 2, 'speculative.type': 'draft-simple' });
      assert.notEqual(r.status, 200, r.text);
      assert.match(r.text, /draft model/);
    });
  }
  await stopServer(plain);
  await stopServer(spec);
}

finish('speculative decoding server checks');
