// Drives `tova serve` with the real openai client (pinned in package.json): chat and completions,
// streaming and not, per-request kv_policy/kv_budget and usage; greedy completions equal
// `tova run --temp 0` alone and among 63 concurrent streams; prefix reuse gives the same tokens
// as no reuse and reports reused counts; --session-dir keeps conversations across evictions
// and restarts; a table of hostile requests; a bounded load test.
// Usage: node run_tests.mjs BUILD_DIR MODEL.gguf     (exit 0: all passed)
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import {
  check, finish, startServer, stopServer, runGreedy, health, rss, metrics,
  requireModule, timeScale,
} from './lib.mjs';

const { default: OpenAI } = await requireModule('openai');

const s = await startServer(['--kv-memory', '256M', '--parallel', '64', '--queue', '128']);
const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });

// Every policy of the registry (GET /v1/models lists them), each with a budget of its own: the
// concurrent checks below cycle through all of them.
const registry = (await (await fetch(`${s.url}/v1/models`)).json()).data[0].tova.policies;
const budgets = [16, 12, 20, 24, 32, 8];
// Each policy in the forms the registry says are worth running ("sink:4", "adakv:tova", ...).
const policies = registry.flatMap((p) => p.examples.map((e) => [e, p.bounded]))
  .map(([e, b], i) => [e, b ? budgets[i % budgets.length] : 0]);
const bounded = policies.filter(([, k]) => k > 0);
assert.ok(registry.length >= 7 && bounded.length >= registry.length - 1,
  `registry: ${registry.map((p) => p.name).join(', ')}`);

await check('completions and chat, streaming and not, per-request multi-state, usage', async () => {
  const c = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time',
    max_tokens: 20, temperature: 0, kv_policy: 'tova', kv_budget: 8 });
  assert.equal(c.object, 'text_completion');
  assert.ok(c.choices[0].text.length > 0);
  assert.equal(c.choices[0].finish_reason, 'length');
  assert.equal(c.usage.completion_tokens, 20);
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + 20);
  assert.equal(c.tova.policy, 'tova');
  assert.equal(c.tova.budget, 8);
  assert.equal(c.tova.states_held, 8);
  assert.ok(c.tova.tokens_evicted > 0);
  // K/V stored as q8_0 (llama.cpp's -ctk/-ctv as kv_type_k/kv_type_v too): the text `tova run`
  // gives with the same --kv-type, in fewer bytes than f32.
  const runQ8 = runGreedy('Once upon a time', 20,
    ['--kv-policy', 'tova', '--kv-budget', '8', '--kv-type', 'q8_0']);
  for (const fields of [{ kv_type: 'q8_0' }, { kv_type_k: 'q8_0', kv_type_v: 'q8_0' }]) {
    const q = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time',
      max_tokens: 20, temperature: 0, kv_policy: 'tova', kv_budget: 8, ...fields });
    assert.equal(q.tova.kv_type, 'q8_0');
    assert.ok(q.tova.kv_bytes < c.tova.kv_bytes * 0.6, `${q.tova.kv_bytes} vs ${c.tova.kv_bytes}`);
    assert.equal(q.choices[0].text, runQ8);
  }
  const g = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time',
    max_tokens: 12, temperature: 0, kv_policy: 'sink:4', kv_budget: 8, kv_positions: 'gap' });
  assert.equal(g.usage.completion_tokens, 12);
  assert.equal(g.tova.states_held, 8);

  const ch = await client.chat.completions.create({ model: 'stories260K', max_tokens: 12,
    messages: [{ role: 'system', content: 'Tell stories.' }, { role: 'user', content: 'A cat' }],
    kv_policy: 'window', kv_budget: 16 });
  assert.equal(ch.object, 'chat.completion');
  assert.equal(ch.choices[0].message.role, 'assistant');
  assert.equal(typeof ch.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(ch.choices[0].finish_reason));
  assert.equal(ch.tova.policy, 'window');

  for (const chat of [false, true]) {
    const stream = chat
      ? await client.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }],
        model: 'stories260K', max_tokens: 15, stream: true, stream_options: { include_usage: true },
        kv_policy: 'h2o', kv_budget: 10 })
      : await client.completions.create({ model: 'stories260K', prompt: 'The dog', max_tokens: 15,
        stream: true, stream_options: { include_usage: true }, temperature: 0 });
    let text = '';
    let usage = null;
    let finish = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        text += chat ? (choice.delta.content ?? '') : choice.text;
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    }
    assert.ok(finish, 'a finish_reason arrived');
    assert.ok(usage && usage.completion_tokens >= 1 && usage.completion_tokens <= 15);
    if (!chat) {
      const whole = await client.completions.create({ model: 'stories260K', prompt: 'The dog',
        max_tokens: 15, temperature: 0 });
      assert.equal(text, whole.choices[0].text, 'streamed text equals the non-streamed text');
    }
  }
  const models = await client.models.list();
  assert.equal(models.data[0].id, 'stories260K');
});

await check('greedy completions equal `tova run --temp 0`, alone and among 63 other streams',
  async () => {
    const prompt = 'Once upon a time, there was a little boy';
    const want = runGreedy(prompt, 60);
    const alone = await client.completions.create({ prompt, max_tokens: 60, temperature: 0,
      model: 'stories260K' });
    assert.equal(alone.choices[0].text, want);
    const others = [];
    for (let i = 0; i < 63; i++) {
      const [p, k] = policies[i % policies.length];
      others.push(client.completions.create({ prompt: `Lily had a ${i} red ball`, max_tokens: 40,
        model: 'stories260K', temperature: i % 2 ? 0.8 : 0, seed: i, kv_policy: p, kv_budget: k,
        stream: i % 3 === 0 }).then(async (r) => {
        if (r.choices) return r;
        for await (const _ of r) { /* drain */ }
        return null;
      }));
    }
    const mine = client.completions.create({ prompt, max_tokens: 60, temperature: 0,
      model: 'stories260K' });
    const [got] = await Promise.all([mine, ...others]);
    assert.equal(got.choices[0].text, want);
  });

await check('every registered policy: the greedy text of `tova run` with that policy', async () => {
  const prompt = 'Once upon a time, there was a little girl named Lily. She';
  // `tova run` first, for every policy (each a blocking child process: run between requests,
  // they held up the event loop long enough, under the sanitizers, for the server to close the
  // idle pooled connections the next requests were about to reuse), then the requests together,
  // after one turn of the loop has taken in those closes.
  const wants = policies.map(([p, k]) =>
    runGreedy(prompt, 40, k > 0 ? ['--kv-policy', p, '--kv-budget', String(k)] : []));
  await new Promise((resolve) => setTimeout(resolve, 50));
  await Promise.all(policies.map(async ([p, k], i) => {
    const got = await client.completions.create({ prompt, max_tokens: 40, temperature: 0,
      model: 'stories260K', kv_policy: p, kv_budget: k });
    assert.equal(got.choices[0].text, wants[i], `${p} k=${k}`);
    assert.equal(got.tova.policy, p);
  }));
});

await check('what real clients send: content parts, developer role, response_format, user, ' +
  'metadata, store', async () => {
  const r = await client.chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 8,
    temperature: 0, user: 'alice', metadata: { team: 'stories' }, store: false,
    response_format: { type: 'text' },
    messages: [{ role: 'developer', content: 'Tell stories.' },
      { role: 'user', content: [{ type: 'text', text: 'Once upon' }, { type: 'text', text: 'a time' }] }] });
  // The same prompt as a plain system message and one string.
  const same = await client.chat.completions.create({ model: 'x', max_tokens: 8, temperature: 0,
    messages: [{ role: 'system', content: 'Tell stories.' },
      { role: 'user', content: 'Once upon\na time' }] });
  assert.equal(r.choices[0].message.content, same.choices[0].message.content);
  assert.equal(r.usage.prompt_tokens, same.usage.prompt_tokens);
  for (const [body, param, says] of [
    [{ response_format: { type: 'xml' } }, 'response_format', /xml.*not supported/],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', format: 'email' } } } },
      'response_format', /format 'email' is not supported/],
    [{ grammar: 'root ::= "a" b' }, 'grammar', /undefined rule 'b'/],
    [{ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] },
      'messages[0].content[0].image_url', /--mmproj/],
    [{ messages: [{ role: 'tool', content: 'x', tool_call_id: '1' }] }, 'messages', /tool/],
    [{ tools: [{ type: 'function', function: { name: 'f' } }] }, 'tools', /tools/]]) {
    const e = await client.chat.completions.create({ model: 'x', max_tokens: 2,
      messages: [{ role: 'user', content: 'Hi' }], ...body }).catch((err) => err);
    assert.equal(e.status, 400, JSON.stringify(body));
    assert.equal(e.param, param);
    assert.match(e.message, says);
  }
});

await check('logprobs + top_logprobs, chat and completions, streamed and not', async () => {
  const c = await client.chat.completions.create({ model: 'x', max_tokens: 12, temperature: 0,
    messages: [{ role: 'user', content: 'Tell me a story' }], logprobs: true, top_logprobs: 3 });
  const lp = c.choices[0].logprobs.content;
  assert.equal(lp.length, c.usage.completion_tokens);
  for (const t of lp) {
    assert.ok(t.logprob <= 0 && t.top_logprobs.length === 3);
    // Greedy: the chosen token is the most likely one.
    assert.equal(t.token, t.top_logprobs[0].token);
    assert.ok(Math.abs(t.logprob - t.top_logprobs[0].logprob) < 1e-6);
    assert.ok(t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob);
    assert.deepEqual(t.bytes, [...Buffer.from(t.token)]);
  }
  assert.equal(lp.map((t) => t.token).join(''), c.choices[0].message.content);
  const t = await client.completions.create({ model: 'x', prompt: 'Once upon a time',
    max_tokens: 10, temperature: 0, logprobs: 2 });
  const tl = t.choices[0].logprobs;
  assert.equal(tl.tokens.length, 10);
  assert.equal(tl.tokens.join(''), t.choices[0].text);
  assert.equal(tl.top_logprobs[0][tl.tokens[0]], tl.token_logprobs[0]);
  assert.equal(tl.text_offset[1], tl.tokens[0].length);
  let streamed = [];
  const st = await client.chat.completions.create({ model: 'x', max_tokens: 12, temperature: 0,
    messages: [{ role: 'user', content: 'Tell me a story' }], logprobs: true, top_logprobs: 3,
    stream: true });
  for await (const chunk of st) {
    for (const ch of chunk.choices) streamed = streamed.concat(ch.logprobs?.content ?? []);
  }
  assert.deepEqual(streamed.map((x) => x.token), lp.map((x) => x.token));
});

await check('n > 1: choices share the prompt state; greedy ones agree, sampled ones differ',
  async () => {
    const one = await client.chat.completions.create({ model: 'x', max_tokens: 16,
      temperature: 0, messages: [{ role: 'user', content: 'Tell me a story' }] });
    const three = await client.chat.completions.create({ model: 'x', max_tokens: 16,
      temperature: 0, n: 3, messages: [{ role: 'user', content: 'Tell me a story' }] });
    assert.deepEqual(three.choices.map((c) => c.index), [0, 1, 2]);
    for (const c of three.choices) assert.equal(c.message.content, one.choices[0].message.content);
    assert.equal(three.usage.completion_tokens, 3 * one.usage.completion_tokens);
    assert.equal(three.usage.prompt_tokens, one.usage.prompt_tokens);
    const sampled = await client.completions.create({ model: 'x', prompt: 'Once upon a time',
      max_tokens: 24, temperature: 1, seed: 7, n: 4, kv_policy: 'tova', kv_budget: 16 });
    assert.equal(sampled.choices.length, 4);
    assert.ok(new Set(sampled.choices.map((c) => c.text)).size > 1, 'sampled choices differ');
    // Each choice alone: choice i is the request with seed + i.
    for (const i of [0, 2]) {
      const alone = await client.completions.create({ model: 'x', prompt: 'Once upon a time',
        max_tokens: 24, temperature: 1, seed: 7 + i, kv_policy: 'tova', kv_budget: 16 });
      assert.equal(sampled.choices[i].text, alone.choices[0].text, `choice ${i}`);
    }
    const texts = ['', ''];
    const finish = [null, null];
    let usage = null;
    const st = await client.chat.completions.create({ model: 'x', max_tokens: 16,
      temperature: 0, n: 2, stream: true, stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Tell me a story' }] });
    for await (const chunk of st) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        texts[c.index] += c.delta.content ?? '';
        if (c.finish_reason) finish[c.index] = c.finish_reason;
      }
    }
    assert.deepEqual(texts, [one.choices[0].message.content, one.choices[0].message.content]);
    assert.ok(finish.every((f) => f));
    assert.equal(usage.completion_tokens, 2 * one.usage.completion_tokens);
  });

await check('3-turn conversation: same tokens with prefix reuse on and off, reuse reported',
  async () => {
    const run = async (reuse) => {
      let prompt = 'Once upon a time, there was a girl named Sue.';
      const out = [];
      for (let turn = 0; turn < 3; turn++) {
        const r = await client.completions.create({ prompt, max_tokens: 24, temperature: 0,
          model: 'stories260K', kv_policy: 'tova', kv_budget: 24, cache_prompt: reuse });
        out.push({ text: r.choices[0].text, reused: r.usage.prompt_tokens_details.cached_tokens,
          n_prompt: r.usage.prompt_tokens });
        prompt += r.choices[0].text + ' Then Sue said hello to a friend.';
      }
      return out;
    };
    const off = await run(false);
    const on = await run(true);
    assert.deepEqual(on.map((t) => t.text), off.map((t) => t.text));
    assert.ok(off.every((t) => t.reused === 0));
    assert.equal(on[0].reused, 0);
    for (const t of on.slice(1)) {
      assert.ok(t.reused > 0 && t.reused < t.n_prompt, `turn reused ${t.reused}/${t.n_prompt}`);
    }
  });

await check('hostile requests: status and error object each, /health OK throughout', async () => {
  const big = 'x'.repeat(2 << 20);
  const table = [
    ['POST', '/v1/completions', '{bad json', 400],
    ['POST', '/v1/completions', '[1,2]', 400],
    ['POST', '/v1/completions', '{}', 400],
    ['POST', '/v1/completions', '{"prompt": 5}', 400],
    ['POST', '/v1/completions', '{"prompt": ["a","b"]}', 400],
    ['POST', '/v1/completions', '{"prompt": [999999]}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "max_tokens": 0}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "max_tokens": "ten"}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "temperature": -1}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "top_p": 7}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "kv_policy": "nope"}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "kv_policy": "tova", "kv_budget": 0}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "kv_policy": "tova", "kv_budget": 2000000000}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "frequency_penalty": 0.5}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "n": 17}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "stop": [1]}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "stream_options": {"include_usage": true}}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "bogus_field": 1}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "kv_positions": "sideways"}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "kv_positions": 3}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "kv_type": "q5_1"}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "kv_type": "f16+rot"}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "kv_type_k": 8}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "kv_type_v": "k=q8_0,v=f16"}', 400],
    ['POST', '/v1/completions', '{"prompt": "x", "max_tokens": 5000, "kv_policy": "full"}', 400],
    ['POST', '/v1/chat/completions', '{"messages": []}', 400],
    ['POST', '/v1/chat/completions', '{"messages": [{"role": "user"}]}', 400],
    ['POST', '/v1/chat/completions', '{"messages": [{"role": "wizard", "content": "x"}]}', 400],
    ['POST', '/v1/chat/completions', '{"prompt": "x"}', 400],
    ['GET', '/v1/nothing', null, 404],
    ['DELETE', '/v1/models', null, 405],
    ['POST', '/tokenize', '{"content": 3}', 400],
    ['POST', '/detokenize', '{"tokens": [-1]}', 400],
    ['POST', '/detokenize', '{"tokens": [1], "extra": 1}', 400],
    ['GET', '/v1/models/%FF%FE', null, 404],  // not UTF-8: once a 500 (the serialiser threw)
    ['POST', '/v1/completions', `{"prompt": "${big}"}`, 413],
  ];
  for (const [method, path, body, status] of table) {
    const r = await fetch(`${s.url}${path}`, { method, body,
      headers: body ? { 'Content-Type': 'application/json' } : {} });
    const j = await r.json();
    assert.equal(r.status, status, `${method} ${path} ${String(body).slice(0, 80)}`);
    assert.equal(typeof j.error.message, 'string', `${path}: error.message`);
    assert.ok(j.error.message.length > 0);
    assert.ok('type' in j.error && 'param' in j.error && 'code' in j.error);
    await health(s.url);
  }
  const tk = await (await fetch(`${s.url}/tokenize`, { method: 'POST',
    body: '{"content": "Once upon a time"}' })).json();
  const dt = await (await fetch(`${s.url}/detokenize`, { method: 'POST',
    body: JSON.stringify({ tokens: tk.tokens }) })).json();
  assert.equal(dt.content, 'Once upon a time');
  // A lone byte token is not UTF-8 on its own: U+FFFD, not a 500 (found by fuzz_http_request).
  // stories260K's ids 3..258 are the byte tokens <0x00>..<0xFF>.
  const lone = await fetch(`${s.url}/detokenize`, { method: 'POST',
    body: JSON.stringify({ tokens: [258] }) });
  assert.equal(lone.status, 200);
  assert.equal((await lone.json()).content, '\ufffd');
});

await check('load: 64 concurrent streams, a quarter disconnect, RSS bounded, memory returned',
  async () => {
    const rss0 = rss(s.proc.pid);
    const total = 128;
    let next = 0;
    let completed = 0;
    let aborted = 0;
    const worker = async () => {
      while (next < total) {
        const i = next++;
        const [p, k] = bounded[i % bounded.length];
        const ctrl = new AbortController();
        const disconnect = i % 4 === 0;
        const r = await fetch(`${s.url}/v1/completions`, { method: 'POST', signal: ctrl.signal,
          // Clients that leave ask for a long answer, so that the stream cannot arrive whole in
          // one read before they get to leave.
          body: JSON.stringify({ prompt: `Tim and his dog ${i}`, stream: true,
            max_tokens: disconnect ? 2048 : 48, ignore_eos: disconnect,
            kv_policy: p, kv_budget: k, seed: i }) });
        assert.equal(r.status, 200);
        const reader = r.body.getReader();
        let buf = '';
        let chunks = 0;
        let left = false;
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buf += Buffer.from(value).toString();
            chunks++;
            if (disconnect && chunks >= 2) {
              ctrl.abort();
              aborted++;
              left = true;
              break;
            }
          }
        } catch (e) {
          if (!disconnect) throw e;
        }
        if (!left) {
          const events = buf.split('\n\n').filter((e) => e.length > 0);
          assert.equal(events.at(-1), 'data: [DONE]');
          for (const e of events.slice(0, -1)) JSON.parse(e.slice('data: '.length));
          completed++;
        }
      }
    };
    await Promise.all(Array.from({ length: 64 }, worker));
    assert.equal(completed + aborted, total);
    assert.ok(aborted >= total / 8, `${aborted} clients disconnected mid-stream`);
    // Every sequence ends; only held conversation states (inside --kv-memory) remain.
    let m;
    for (let i = 0; i < 50 * timeScale; i++) {
      m = await metrics(s.url);
      if (m.get('tova_active_sequences') === 0) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(m.get('tova_active_sequences'), 0);
    assert.equal(m.get('tova_queued_requests'), 0);
    assert.equal(m.get('tova_kv_bytes_reserved'), m.get('tova_kv_bytes_held'));
    assert.ok(m.get('tova_kv_bytes_held') <= 256 * 1024 * 1024);
    const grown = rss(s.proc.pid) - rss0;
    assert.ok(grown < 200 * 1024 * 1024, `RSS grew ${grown} bytes`);
    assert.match(m.text, /tova_requests_total\{status="200"\}/);
    assert.match(m.text, /tova_time_to_first_token_seconds_bucket/);
    await health(s.url);
  });

const end = await stopServer(s);
await check('SIGTERM: the server exits 0', async () => assert.equal(end.code, 0));

await check('--session-dir: conversations leave memory for disk, come back, survive a restart',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tova-sessions-'));
    // One held state in memory: a second conversation pushes the first one to disk.
    const args = ['--session-dir', dir, '--cache-states', '1'];
    const ask = async (c, prompt, reuse = true) => {
      const r = await c.completions.create({ prompt, max_tokens: 16, temperature: 0,
        model: 'stories260K', kv_policy: 'tova', kv_budget: 24, cache_prompt: reuse });
      return { text: r.choices[0].text, reused: r.usage.prompt_tokens_details.cached_tokens };
    };
    let srv = await startServer(args);
    try {
      let c = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'none' });
      let a = 'Once upon a time, there was a girl named Sue.';
      const a1 = await ask(c, a);
      await ask(c, 'Tom had a big red ball.');
      assert.equal(readdirSync(dir).filter((f) => f.endsWith('.sess')).length, 1);
      a += a1.text + ' Then Sue said hello to a friend.';
      const a2 = await ask(c, a);
      assert.ok(a2.reused > 0, 'turn 2 continues the state from disk');
      assert.equal(a2.text, (await ask(c, a, false)).text);
      const m = await metrics(srv.url);
      assert.ok(m.get('tova_restored_total') >= 1);
      assert.ok(m.get('tova_stored_total') >= 1);
      a += a2.text + ' The friend smiled.';
      const end = await stopServer(srv);
      assert.equal(end.code, 0);
      // A new process finds the conversation in the directory; a file that is not a session
      // is reported and left alone.
      const junk = join(dir, 'junk.sess');
      writeFileSync(junk, 'not a session');
      srv = await startServer(args);
      assert.match(srv.stderr(), /--session-dir .*: [1-9]\d* conversation states/);
      assert.match(srv.stderr(), /1 files not used, first: .*junk\.sess: not a tova session file/);
      assert.equal(readFileSync(junk, 'utf8'), 'not a session');
      c = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'none' });
      const a3 = await ask(c, a);
      assert.ok(a3.reused > 0, 'turn 3 continues after the restart');
      assert.equal(a3.text, (await ask(c, a, false)).text);
    } finally {
      await stopServer(srv);
      rmSync(dir, { recursive: true, force: true });
    }
  });

await check('a full wait queue answers 503 with Retry-After', async () => {
  const q = await startServer(['--parallel', '1', '--queue', '1']);
  try {
    const body = JSON.stringify({ prompt: 'Once', max_tokens: 200, kv_policy: 'tova',
      kv_budget: 8 });
    const rs = await Promise.all(Array.from({ length: 6 }, () => fetch(`${q.url}/v1/completions`,
      { method: 'POST', body })));
    const busy = rs.filter((r) => r.status === 503);
    assert.ok(busy.length >= 1, 'some request was refused');
    assert.equal(busy[0].headers.get('retry-after'), '1');
    assert.equal((await busy[0].json()).error.code, 'overloaded');
    await Promise.all(rs.filter((r) => r !== busy[0]).map((r) => r.text()));
  } finally {
    await stopServer(q);
  }
});

finish('server tests');
