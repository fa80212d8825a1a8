// Past one machine (issue 24, item 6), on loopback: two `tova serve` replicas share one
// --session-dir behind nginx from Debian (started here with its own config in a temp folder,
// not as a system service): consistent hashing on X-Session-Id or the `user` field, round robin
// without either; a conversation whose replica is stopped continues on the other from its file,
// with cached tokens and the greedy text of processing its whole history; both replicas writing,
// taking and deleting files in the shared folder at once leave only whole files.
// Usage: node replicas_test.mjs BUILD_DIR MODEL.gguf   (exit 0 passed, 77 skipped)
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, readdirSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import {
  check, finish, startServer, stopServer, waitFor, freePort, skipUnlessAvailable,
} from './lib.mjs';

const nginxPath = process.env.TOVA_NGINX || '/usr/sbin/nginx';
skipUnlessAvailable(nginxPath, 'replicas test', 'the shared --session-dir code runs under the ' +
  'sanitizers in test_runtime StateStore.* and ServerSoak');

// nginx in the foreground with everything (pid, logs, temp files) in `dir`.
async function startNginx(dir, upstreams) {
  const port = await freePort();
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi', 'logs']) mkdirSync(join(dir, d));
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, `
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 512; }
http {
  access_log ${dir}/logs/access.log;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
${readFileSync(new URL('../../../docs/nginx-tova.conf', import.meta.url), 'utf8')
    .replace(/server 127\.0\.0\.1:8081[^;]*;\n\s*server 127\.0\.0\.1:8082[^;]*;/,
      upstreams.map((u) => `server 127.0.0.1:${u} max_fails=1 fail_timeout=30s;`).join('\n    '))
    .replace('listen 127.0.0.1:8080;', `listen 127.0.0.1:${port};`)}
}
`);
  const p = spawn(nginxPath, ['-p', dir, '-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((res) => p.on('exit', (code) => res(code)));
  const url = `http://127.0.0.1:${port}`;
  const up = await waitFor(async () => {
    if (p.exitCode !== null) return true;
    try { await fetch(`${url}/health`); return true; } catch { return false; }
  }, 10000);
  if (!up || p.exitCode !== null) throw new Error(`nginx did not start: ${err}`);
  return { proc: p, url, exited, stop: async () => { p.kill('SIGQUIT'); await exited; } };
}

const root = mkdtempSync(join(tmpdir(), 'tova-replicas-'));
const sessions = join(root, 'sessions');
mkdirSync(sessions);
const replicaArgs = ['--session-dir', sessions, '--cache-states', '2', '--kv-memory', '64M'];
let a = await startServer(replicaArgs);
let b = await startServer(replicaArgs);
const nginxDir = join(root, 'nginx');
mkdirSync(nginxDir);
const proxy = await startNginx(nginxDir, [a.port, b.port]);

const complete = async (body, headers = {}) => {
  const r = await fetch(`${proxy.url}/v1/completions`, { method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ max_tokens: 16, temperature: 0, kv_policy: 'tova', kv_budget: 24,
      ...body }) });
  const j = await r.json();
  assert.equal(r.status, 200, JSON.stringify(j));
  return { text: j.choices[0].text, cached: j.usage.prompt_tokens_details.cached_tokens,
    upstream: r.headers.get('x-upstream') };
};

try {
  await check('a conversation key keeps a conversation on one replica; none: round robin',
    async () => {
      const seen = new Set();
      for (let i = 0; i < 4; i++) {
        seen.add((await complete({ prompt: 'Once upon a time' }, { 'X-Session-Id': 'k1' }))
          .upstream);
      }
      assert.equal(seen.size, 1, [...seen].join(' '));
      const byUser = new Set();
      for (let i = 0; i < 4; i++) {
        byUser.add((await complete({ prompt: `Tom ran ${i}.`, user: 'alice' })).upstream);
      }
      assert.equal(byUser.size, 1, [...byUser].join(' '));
      const rr = [];
      for (let i = 0; i < 4; i++) rr.push((await complete({ prompt: `Sue sat ${i}.` })).upstream);
      assert.equal(new Set(rr).size, 2, `round robin: ${rr.join(' ')}`);
    });

  await check('its replica stopped, a conversation continues on the other from the shared file',
    async () => {
      const key = { 'X-Session-Id': 'conversation-7' };
      let prompt = 'Once upon a time, there was a girl named Sue.';
      const t1 = await complete({ prompt }, key);
      prompt += t1.text + ' Then Sue said hello to a friend.';
      const t2 = await complete({ prompt }, key);
      assert.equal(t2.upstream, t1.upstream);
      assert.ok(t2.cached > 0, 'turn 2 continues the held state');
      prompt += t2.text + ' The friend smiled.';
      // Stop the conversation's replica: SIGTERM writes its held states to the shared folder.
      const [gone, other] = t1.upstream.endsWith(`:${a.port}`) ? [a, b] : [b, a];
      assert.equal((await stopServer(gone)).code, 0);
      const t3 = await complete({ prompt }, key);
      assert.ok(t3.upstream.endsWith(`:${other.port}`), `served by ${t3.upstream}`);
      assert.ok(t3.cached > 0, `turn 3 continued from the file: cached_tokens ${t3.cached}`);
      // The same text as processing the whole history.
      const fresh = await fetch(`${other.url}/v1/completions`, { method: 'POST',
        body: JSON.stringify({ prompt, max_tokens: 16, temperature: 0, kv_policy: 'tova',
          kv_budget: 24, cache_prompt: false }) }).then((r) => r.json());
      assert.equal(t3.text, fresh.choices[0].text);
      // Bring it back for the next check.
      if (gone === a) a = await startServer(replicaArgs); else b = await startServer(replicaArgs);
    });

  await check('two writers: both replicas spilling, taking and deleting in one folder', async () => {
    // Direct to both replicas at once: every request pushes an older state to the folder
    // (--cache-states 2) and continues one from it; a small --session-dir-max makes both delete.
    for (const s of [a, b]) await stopServer(s);
    const args = [...replicaArgs, '--session-dir-max', '40K'];
    a = await startServer(args);
    b = await startServer(args);
    const ask = (s, prompt) => fetch(`${s.url}/v1/completions`, { method: 'POST',
      body: JSON.stringify({ prompt, max_tokens: 8, temperature: 0, kv_policy: 'tova',
        kv_budget: 24 }) }).then(async (r) => ({ status: r.status, j: await r.json() }));
    const convs = Array.from({ length: 12 }, (_, i) => `Lily had ${i} red balls and a dog.`);
    for (let turn = 0; turn < 3; turn++) {
      const rs = await Promise.all(convs.map((p, i) => ask(i % 2 ? a : b, p)));
      rs.forEach((r, i) => {
        assert.equal(r.status, 200, JSON.stringify(r.j));
        convs[i] += `${r.j.choices[0].text} Then more.`;
      });
    }
    // Only whole state files: no temporary file left, each one loads (a restart indexes and
    // reports any it cannot use).
    for (const s of [a, b]) assert.equal((await stopServer(s)).code, 0);
    const files = readdirSync(sessions);
    assert.deepEqual(files.filter((f) => !f.endsWith('.sess')), []);
    a = await startServer(args);
    assert.doesNotMatch(a.stderr(), /files not used/);
    b = await startServer(args);
  });
} finally {
  await proxy.stop();
  for (const s of [a, b]) await stopServer(s);
  rmSync(root, { recursive: true, force: true });
}
finish('replica tests');
