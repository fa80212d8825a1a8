// What an operator runs into with `tova serve` (issue 24, item 1), each check failing on the
// server before its fix: a port in use, a listen backlog for bursts, settings that make the
// server useless, the wait queue's count, a non-streaming client that leaves, a second signal
// while draining, hostile Content-Length, 405 with Allow, the bearer scheme's case, CORS, the
// access log (text and JSON), the latency histograms, chat with the bundled model.
// Usage: node ops_tests.mjs BUILD_DIR MODEL.gguf     (exit 0: all passed)
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { resolve } from 'node:path';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import {
  check, finish, startServer, stopServer, expectRefusal, health, metrics, waitFor, rawRequest,
  sleep, tova,
  requireModule, freePort, timeScale,
} from './lib.mjs';

const { default: OpenAI } = await requireModule('openai');

const post = (url, path, body, headers = {}) => fetch(`${url}${path}`, { method: 'POST',
  headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) });
// A request that keeps a sequence busy for many seconds on the bundled model (with
// --max-tokens raised): a bounded state, no end-of-text.
const long = (extra = {}) => ({ prompt: 'Once upon a time', max_tokens: 200000, ignore_eos: true,
  kv_policy: 'tova', kv_budget: 8, temperature: 0, ...extra });

await check('a port in use: the second server refuses to start with one line', async () => {
  const a = await startServer();
  try {
    const r = await expectRefusal(['--port', String(a.port)]);
    assert.notEqual(r.code, 0);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], new RegExp(`127\\.0\\.0\\.1:${a.port}.*already in use`));
    await health(a.url);
  } finally {
    await stopServer(a);
  }
});

await check('settings that leave the server useless are errors, one line each', async () => {
  for (const [args, want] of [[['--chat-template', 'foo'], /--chat-template.*'foo'/],
    [['--kv-memory', '1K'], /--kv-memory 1024 bytes cannot hold one sequence/],
    [['--kv-memory', '1K', '--kv-policy', 'tova', '--kv-budget', '64'], /tova k=64/]]) {
    const r = await expectRefusal(['--port', '0', ...args]);
    assert.notEqual(r.code, 0, args.join(' '));
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], want);
  }
});

await check('a burst of 150 connections: every one answered, none reset', async () => {
  const s = await startServer();
  try {
    const n = 150;
    // All connections first (the server sees 150 pending at once), then the requests.
    const socks = await Promise.all(Array.from({ length: n }, () => new Promise((resolve) => {
      const sock = net.connect(s.port, '127.0.0.1');
      const r = { data: '', error: null, sock };
      sock.on('connect', () => resolve(r));
      sock.on('error', (e) => { r.error = e; resolve(r); });
      sock.on('data', (d) => { r.data += d; });
    })));
    await Promise.all(socks.map((r) => new Promise((resolve) => {
      if (r.error) return resolve();
      r.sock.on('close', resolve);
      r.sock.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    })));
    const bad = socks.filter((r) => r.error || !r.data.startsWith('HTTP/1.1 200'));
    assert.equal(bad.length, 0, `${bad.length} of ${n} failed: ${bad[0]?.error ?? bad[0]?.data}`);
    // The kernel's queue for the listening socket (ss: Send-Q of a LISTEN socket is its backlog).
    let ss = '';
    try {
      ss = execFileSync('ss', ['-ltnH', `sport = :${s.port}`]).toString();
    } catch { /* no ss: the burst above is the check */ }
    const q = /LISTEN\s+\d+\s+(\d+)/.exec(ss);
    if (q) assert.ok(Number(q[1]) >= 512, `listen backlog ${q[1]}`);
  } finally {
    await stopServer(s);
  }
});

await check('--queue counts only requests beyond --parallel', async () => {
  // --parallel 4 --queue 0: an idle server takes 4 at once.
  let s = await startServer(['--parallel', '4', '--queue', '0', '--max-tokens', '200000']);
  try {
    const rs = await Promise.all(Array.from({ length: 4 }, () =>
      post(s.url, '/v1/completions', long({ max_tokens: 1500 }))));
    assert.deepEqual(rs.map((r) => r.status), [200, 200, 200, 200]);
    await Promise.all(rs.map((r) => r.text()));
  } finally {
    await stopServer(s);
  }
  // --parallel 2 --queue 2: of 6 at once, 4 are taken, 2 refused with 503.
  s = await startServer(['--parallel', '2', '--queue', '2', '--max-tokens', '200000']);
  try {
    const rs = await Promise.all(Array.from({ length: 6 }, () =>
      post(s.url, '/v1/completions', long({ max_tokens: 3000 }))));
    const codes = rs.map((r) => r.status).sort();
    assert.deepEqual(codes, [200, 200, 200, 200, 503, 503]);
    await Promise.all(rs.map((r) => r.text()));
  } finally {
    await stopServer(s);
  }
});

await check('kv_budget: refused past --kv-memory (400 naming it), else admitted by the bytes ' +
  'a request can reach', async () => {
  const s = await startServer(['--kv-memory', '64M', '--max-tokens', '200000']);
  try {
    for (const budget of [100000000, 2000000000, 1000000]) {
      const r = await post(s.url, '/v1/completions', { prompt: 'Once', max_tokens: 4,
        kv_policy: 'tova', kv_budget: budget });
      assert.equal(r.status, 400, `kv_budget ${budget}`);
      const e = (await r.json()).error;
      assert.equal(e.param, 'kv_budget');
      assert.match(e.message, new RegExp(`kv_budget ${budget}: .* more than the server's ` +
        '--kv-memory'));
    }
    // 40,000 states per layer fit in 64M (~58 MB); a request that reaches 2,000 tokens
    // allocates and reserves those, not 40,000: two run at once.
    const ctrl = new AbortController();
    const reqs = [0, 1].map(() => fetch(`${s.url}/v1/completions`, { method: 'POST',
      signal: ctrl.signal, body: JSON.stringify(long({ kv_budget: 40000, max_tokens: 2000 })) })
      .catch(() => null));
    assert.ok(await waitFor(async () => (await metrics(s.url)).get('tova_active_sequences') === 2),
      'both admitted');
    const m = await metrics(s.url);
    assert.ok(m.get('tova_kv_bytes_reserved') < 8 << 20, `reserved ${m.get('tova_kv_bytes_reserved')}`);
    ctrl.abort();
    await Promise.all(reqs);
    const small = await (await post(s.url, '/v1/completions', { prompt: 'Once upon a time',
      max_tokens: 8, kv_policy: 'tova', kv_budget: 40000 })).json();
    assert.ok(small.tova.kv_bytes < 1 << 20, `a short request allocated ${small.tova.kv_bytes}`);
  } finally {
    await stopServer(s);
  }
});

await check('a non-streaming client that leaves stops its generation', async () => {
  const s = await startServer(['--max-tokens', '200000']);
  try {
    const ctrl = new AbortController();
    const req = fetch(`${s.url}/v1/completions`, { method: 'POST', signal: ctrl.signal,
      body: JSON.stringify(long()) }).catch((e) => e);
    assert.ok(await waitFor(async () => (await metrics(s.url)).get('tova_active_sequences') === 1));
    ctrl.abort();
    assert.ok((await req) instanceof Error);
    const t0 = Date.now();
    const stopped = await waitFor(
      async () => (await metrics(s.url)).get('tova_active_sequences') === 0, 3000 * timeScale);
    assert.ok(stopped, 'the abandoned request is still generating');
    assert.ok(Date.now() - t0 < 1000 * timeScale, `stopped after ${Date.now() - t0} ms`);
    assert.ok((await metrics(s.url)).get('tova_generated_tokens_total') < 200000);
    await sleep(100);
    assert.match(s.stderr(), / POST \/v1\/completions 499 /);
  } finally {
    await stopServer(s);
  }
});

await check('SIGTERM drains (/health 503 "draining", new requests 503); a second one stops now',
  async () => {
    const s = await startServer(['--max-tokens', '200000']);
    const stream = await post(s.url, '/v1/completions', long({ stream: true }));
    assert.equal(stream.status, 200);
    const reader = stream.body.getReader();
    await reader.read();  // generating
    s.proc.kill('SIGTERM');
    const draining = await waitFor(async () => (await fetch(`${s.url}/health`)).status === 503);
    assert.ok(draining, '/health still 200 while draining');
    const h = await fetch(`${s.url}/health`);
    assert.equal((await h.json()).status, 'draining');
    const refused = await post(s.url, '/v1/completions', { prompt: 'x', max_tokens: 1 });
    assert.equal(refused.status, 503);
    assert.equal((await refused.json()).error.code, 'shutting_down');
    const t0 = Date.now();
    s.proc.kill('SIGTERM');
    const exit = await Promise.race([s.exited, sleep(5000 * timeScale).then(() => null)]);
    if (!exit) s.proc.kill('SIGKILL');
    assert.ok(exit, `a second SIGTERM did not stop the server within ${5 * timeScale} s`);
    assert.equal(exit.code, 1);
    assert.ok(Date.now() - t0 < 5000 * timeScale);
    assert.match(s.stderr(), /again: stopping now \(1 requests cut\)/);
    // The stream ends with an error event, not silence.
    let rest = '';
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ done: true }));
      if (done) break;
      rest += Buffer.from(value).toString();
    }
    assert.match(rest, /"the server stopped"/);
  });

await check('Content-Length absurd, negative or not a number: a 4xx at once', async () => {
  const s = await startServer(['--max-body', '4096']);
  try {
    for (const [len, want] of [['99999999999999999999', 413], ['-5', 400], ['abc', 400],
      ['5000', 413], ['1e3', 400]]) {
      const r = await rawRequest(s.port, 'POST /v1/completions HTTP/1.1\r\nHost: x\r\n' +
        `Content-Type: application/json\r\nContent-Length: ${len}\r\n\r\n{"prompt":`, 3000 * timeScale);
      assert.equal(r.status, want, `Content-Length ${len}: ${r.data.slice(0, 200)}`);
      assert.ok(r.ms < 2000 * timeScale, `Content-Length ${len}: answered after ${r.ms} ms`);
      const body = JSON.parse(r.data.slice(r.data.indexOf('\r\n\r\n') + 4));
      assert.match(body.error.message, /Content-Length|--max-body/);
    }
    await health(s.url);
  } finally {
    await stopServer(s);
  }
});

// A client that sends its whole body before it reads (Python's urllib, curl, the openai client)
// must read the 413 error object, not "Broken pipe" or "Connection reset": the server answers
// at once, then reads and drops what is still coming before it closes (a lingering close).
await check('an oversized body: urllib, curl and the openai client each read the 413 object',
  async () => {
    const s = await startServer(['--max-body', '4096']);
    const big = 'x'.repeat(16 << 20);  // 16 MiB: more than the kernel's socket buffers hold
    const file = resolve(process.env.TMPDIR || '/tmp', `tova-413-${process.pid}.json`);
    writeFileSync(file, JSON.stringify({ prompt: big }));
    const expect413 = (text, who) => {
      const j = JSON.parse(text);
      assert.equal(j.error.code, 'request_too_large', `${who}: ${text.slice(0, 200)}`);
      assert.match(j.error.message, /larger than the server's limit \(--max-body 4096 bytes\)/);
    };
    try {
      const py = spawnSync('python3', ['-c', `
import sys, urllib.request, urllib.error
body = open(sys.argv[2], 'rb').read()
req = urllib.request.Request(sys.argv[1] + '/v1/completions', data=body,
                             headers={'Content-Type': 'application/json'})
try:
    urllib.request.urlopen(req, timeout=30)
    print('no error')
except urllib.error.HTTPError as e:
    print(e.code)
    print(e.read().decode())
`, s.url, file], { encoding: 'utf8' });
      assert.equal(py.status, 0, py.stderr);
      const [code, ...rest] = py.stdout.split('\n');
      assert.equal(code, '413', py.stdout.slice(0, 200));
      expect413(rest.join('\n'), 'urllib');

      const curl = spawnSync('curl', ['-sS', '-o', '-', '-w', '\n%{http_code}',
        '-H', 'Content-Type: application/json', '--data-binary', `@${file}`,
        `${s.url}/v1/completions`], { encoding: 'utf8' });
      assert.equal(curl.status, 0, curl.stderr);
      const lines = curl.stdout.trimEnd().split('\n');
      assert.equal(lines.at(-1), '413', curl.stdout.slice(0, 200));
      expect413(lines.slice(0, -1).join('\n'), 'curl');

      const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
      const e = await client.completions.create({ model: 'm', prompt: big }).then(
        () => null, (err) => err);
      assert.ok(e instanceof OpenAI.APIError, String(e));
      assert.equal(e.status, 413, String(e));
      assert.equal(e.error?.code, 'request_too_large', JSON.stringify(e.error));
      await health(s.url);
    } finally {
      unlinkSync(file);
      await stopServer(s);
    }
  });

// The same for the other answers given before a body is read: a bad API key, a Content-Length
// that is not a number. (httplib's own 400 for a request line it cannot parse comes before the
// connection is known; httplib then reads on, so its client is not cut off either.)
await check('early answers with a body still coming: the error object, then a close', async () => {
  const s = await startServer(['--max-body', '4096', '--api-key', 'sekret']);
  const body = 'x'.repeat(4000);
  try {
    const send = (head, n = 0) => rawRequest(s.port, head + body.repeat(n), 5000);
    for (const [what, head, n, want] of [
      ['a bad key', 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer no\r\n' +
        'Content-Length: 4000\r\n\r\n', 1, 401],
      ['a body over the limit', 'POST /v1/completions HTTP/1.1\r\nHost: x\r\n' +
        'Authorization: Bearer sekret\r\nContent-Length: 4000000\r\n\r\n', 1000, 413],
      ['a Content-Length that is no number', 'POST /v1/completions HTTP/1.1\r\nHost: x\r\n' +
        'Authorization: Bearer sekret\r\nContent-Length: 4e6\r\n\r\n', 1000, 400],
    ]) {
      const r = await send(head, n);
      assert.equal(r.status, want, `${what}: ${r.data.slice(0, 200)} ${r.error}`);
      assert.equal(r.error, null, `${what}: ${r.error}`);
      assert.match(r.data, /\r\nConnection: close\r\n/i, what);
      const j = JSON.parse(r.data.slice(r.data.indexOf('\r\n\r\n') + 4));
      assert.equal(typeof j.error.message, 'string', what);
    }
    await health(s.url);
  } finally {
    await stopServer(s);
  }
});

// The library names a field as it knows it ("kv budget", "kv rotate"); the server puts the
// request's field name in its place.
await check('errors name the request fields: kv_budget, kv_type', async () => {
  const s = await startServer();
  try {
    for (const [body, want] of [
      [{ prompt: 'x', kv_policy: 'tova', kv_budget: 0 },
        /^kv_budget: KV policy 'tova' needs at least 1 state/],
      [{ prompt: 'x', kv_type: 'f16+rot' }, /^kv_type: \+rot needs a quantized type/],
    ]) {
      const r = await post(s.url, '/v1/completions', body);
      assert.equal(r.status, 400);
      const j = await r.json();
      assert.match(j.error.message, want, JSON.stringify(body));
    }
  } finally {
    await stopServer(s);
  }
});

await check('a wrong method: 405 with Allow and an error object; OPTIONS answers Allow',
  async () => {
    const s = await startServer();
    try {
      for (const [method, path, allow] of [['GET', '/v1/completions', 'POST, OPTIONS'],
        ['GET', '/v1/chat/completions', 'POST, OPTIONS'], ['DELETE', '/v1/models',
          'GET, HEAD, OPTIONS'], ['POST', '/health', 'GET, HEAD, OPTIONS'],
        ['PUT', '/tokenize', 'POST, OPTIONS']]) {
        const r = await fetch(`${s.url}${path}`, { method });
        assert.equal(r.status, 405, `${method} ${path}`);
        assert.equal(r.headers.get('allow'), allow);
        const j = await r.json();
        assert.equal(j.error.code, 'method_not_allowed');
        assert.match(j.error.message, new RegExp(`${method} is not allowed on ${path}`));
      }
      const o = await fetch(`${s.url}/v1/completions`, { method: 'OPTIONS' });
      assert.equal(o.status, 204);
      assert.equal(o.headers.get('allow'), 'POST, OPTIONS');
      assert.equal(o.headers.get('access-control-allow-origin'), null);  // no --cors
      assert.equal((await fetch(`${s.url}/v1/nothing`)).status, 404);
    } finally {
      await stopServer(s);
    }
  });

await check('Authorization: the Bearer scheme in any case, the key exactly', async () => {
  const s = await startServer(['--api-key', 'sekret']);
  try {
    for (const [auth, want] of [['Bearer sekret', 200], ['bearer sekret', 200],
      ['BEARER sekret', 200], ['Bearer  sekret', 200], ['Bearer SEKRET', 401],
      ['Basic sekret', 401], ['sekret', 401], ['Bearer sekret2', 401], ['', 401]]) {
      const r = await fetch(`${s.url}/v1/models`, { headers: auth ? { Authorization: auth } : {} });
      assert.equal(r.status, want, `Authorization: ${auth}`);
    }
    const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'sekret', maxRetries: 0 });
    assert.equal((await c.models.list()).data.length, 1);
    await health(s.url);  // /health needs no key
  } finally {
    await stopServer(s);
  }
});

await check('--cors ORIGIN: preflight answered, allowed origins get headers, others none',
  async () => {
    const s = await startServer(['--cors', 'http://app.test', '--api-key', 'k']);
    try {
      const pre = await fetch(`${s.url}/v1/chat/completions`, { method: 'OPTIONS', headers: {
        Origin: 'http://app.test', 'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization,content-type,x-stainless-os' } });
      assert.equal(pre.status, 204);  // no key needed for a preflight
      assert.equal(pre.headers.get('access-control-allow-origin'), 'http://app.test');
      assert.match(pre.headers.get('access-control-allow-methods'), /POST/);
      assert.equal(pre.headers.get('access-control-allow-headers'),
        'authorization,content-type,x-stainless-os');
      const ok = await post(s.url, '/v1/completions', { prompt: 'Once', max_tokens: 2 },
        { Origin: 'http://app.test', Authorization: 'Bearer k' });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('access-control-allow-origin'), 'http://app.test');
      const denied = await post(s.url, '/v1/completions', { prompt: 'Once' },
        { Origin: 'http://app.test' });
      assert.equal(denied.status, 401);  // errors carry the header too: the page can read them
      assert.equal(denied.headers.get('access-control-allow-origin'), 'http://app.test');
      const other = await post(s.url, '/v1/completions', { prompt: 'Once', max_tokens: 2 },
        { Origin: 'http://evil.test', Authorization: 'Bearer k' });
      assert.equal(other.headers.get('access-control-allow-origin'), null);
      await other.text();
    } finally {
      await stopServer(s);
    }
  });

await check('access log: one line per request (text and JSON), 404s and streams included',
  async () => {
    for (const format of ['text', 'json']) {
      const s = await startServer(['--log-format', format]);
      try {
        const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
        await c.completions.create({ model: 'any', prompt: 'Once upon a time', max_tokens: 5,
          kv_policy: 'tova', kv_budget: 16 });
        const st = await c.chat.completions.create({ model: 'x', stream: true, max_tokens: 4,
          messages: [{ role: 'user', content: 'Hi' }] });
        for await (const _ of st) { /* drain */ }
        await fetch(`${s.url}/nowhere`);
        await sleep(100);
      } finally {
        await stopServer(s);
      }
      const lines = s.stderr().split('\n').filter((l) => /\/v1\/|\/nowhere/.test(l) &&
        !/^tova serve:/.test(l));
      assert.equal(lines.length, 3, s.stderr());
      if (format === 'json') {
        const [a, b, c] = lines.map((l) => JSON.parse(l));
        assert.equal(a.path, '/v1/completions');
        assert.equal(a.status, 200);
        assert.equal(a.policy, 'tova');
        assert.equal(a.budget, 16);
        assert.equal(a.generated_tokens, 5);
        assert.ok(a.prompt_tokens > 0 && a.cached_tokens === 0 && a.ttft_seconds > 0);
        assert.match(a.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        assert.ok(a.id.length > 0);
        assert.equal(b.stream, true);
        assert.ok(b.generated_tokens >= 1);
        assert.equal(c.status, 404);
      } else {
        assert.match(lines[0], /^\S+Z \S+ POST \/v1\/completions 200 [\d.]+s policy=tova budget=16 prompt=\d+ cached=0 generated=5 ttft=[\d.]+s/);
        assert.match(lines[1], / stream prompt=\d+ cached=\d+ generated=\d+ ttft=/);
        assert.match(lines[2], / GET \/nowhere 404 /);
      }
    }
  });

await check('/metrics: time-to-first-token and per-token latency histograms', async () => {
  const s = await startServer();
  try {
    await post(s.url, '/v1/completions', { prompt: 'Once', max_tokens: 8, ignore_eos: true })
      .then((r) => r.json());
    const m = await metrics(s.url);
    assert.equal(m.get('tova_time_to_first_token_seconds_count'), 1);
    assert.equal(m.get('tova_time_per_output_token_seconds_count'), 7);
    assert.match(m.text, /tova_time_per_output_token_seconds_bucket\{le="\+Inf"\} 7/);
  } finally {
    await stopServer(s);
  }
});

await check('the bundled model chats without --chat-template (chatml), any model name',
  async () => {
    const s = await startServer(['--alias', 'storyteller'], { chatTemplate: null });
    try {
      assert.match(s.stderr(), /no chat template: chat requests use chatml/);
      const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
      const r = await c.chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 8,
        messages: [{ role: 'user', content: 'Tell me a story' }] });
      assert.equal(r.model, 'storyteller');
      assert.equal(r.choices[0].message.role, 'assistant');
      assert.equal((await c.models.list()).data[0].id, 'storyteller');
    } finally {
      await stopServer(s);
    }
  });

await check('GET /v1/sessions/ID: the state live while it generates, and held after', async () => {
  const s = await startServer(['--max-tokens', '200000']);
  try {
    const ctrl = new AbortController();
    const r = await fetch(`${s.url}/v1/completions`, { method: 'POST', signal: ctrl.signal,
      body: JSON.stringify(long({ stream: true, kv_budget: 16 })) });
    const id = r.headers.get('x-request-id');
    assert.ok(id);
    const reader = r.body.getReader();
    await reader.read();
    const a = await (await fetch(`${s.url}/v1/sessions/${id}`)).json();
    await sleep(100);
    const b = await (await fetch(`${s.url}/v1/sessions/${id}`)).json();
    assert.equal(a.generating, true);
    assert.ok(b.tova.tokens_seen > a.tova.tokens_seen, 'tokens_seen grows');
    assert.equal(a.tova.policy, 'tova');
    assert.equal(a.held_by.length, a.tokens.length);
    assert.equal(a.pieces.length, a.tokens.length);
    // Every (layer, KV head) holds 16 states once past them.
    const pairs = a.n_layer * a.n_head_kv;
    assert.equal(b.held_by.reduce((x, y) => x + y, 0), 16 * pairs);
    ctrl.abort();
    assert.ok(await waitFor(async () =>
      (await fetch(`${s.url}/v1/sessions/${id}`)).status === 404), 'dropped when its client left');
    // A finished request's state is held for the next turn and says so.
    const done = await post(s.url, '/v1/completions', { prompt: 'Once upon a time', max_tokens: 8,
      kv_policy: 'window', kv_budget: 4 });
    const held = await (await fetch(`${s.url}/v1/sessions/${done.headers.get('x-request-id')}`))
      .json();
    assert.equal(held.generating, false);
    assert.deepEqual(held.held_by.slice(-4), Array(4).fill(pairs));
    assert.ok(held.held_by.slice(0, -4).every((h) => h === 0));
    const missing = await fetch(`${s.url}/v1/sessions/nope`);
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error.code, 'not_found');
  } finally {
    await stopServer(s);
  }
});

await check("the README's serve example, as written (only the port is a free one)", async () => {
  // The first sh block of README.md's `tova serve` section: the server line, then the request.
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('### `tova serve`'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)[1];
  const [serveLine, ...rest] = block.split('\n');
  assert.match(serveLine, /^tova serve /);
  const port = await freePort();
  const withPort = (t) => t.replaceAll('8080', String(port));
  const env = { ...process.env, PATH: `${resolve(tova, '..')}:${process.env.PATH}` };
  const server = spawn('bash', ['-c', `exec ${withPort(serveLine)}`], { env,
    cwd: new URL('../../..', import.meta.url).pathname, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    let out = '';
    server.stdout.on('data', (d) => { out += d; });
    assert.ok(await waitFor(() => /listening on/.test(out), 20000), 'the README server started');
    const curl = spawnSync('bash', ['-c', withPort(rest.join('\n'))], { env, encoding: 'utf8' });
    assert.equal(curl.status, 0, curl.stderr);
    const events = curl.stdout.split('\n\n').filter((e) => e.trim().length > 0);
    assert.equal(events.at(-1).trim(), 'data: [DONE]', curl.stdout.slice(0, 500));
    let text = '';
    for (const e of events.slice(0, -1)) {
      const j = JSON.parse(e.slice('data: '.length));
      assert.ok(!j.error, JSON.stringify(j));
      for (const c of j.choices) text += c.delta.content ?? '';
    }
    assert.ok(text.length > 0, 'a story');
  } finally {
    server.kill('SIGTERM');
    await new Promise((res) => server.on('exit', res));
  }
});

finish('server operations tests');
