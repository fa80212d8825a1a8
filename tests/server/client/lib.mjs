// What the server tests share: starting and stopping `tova serve` on a free loopback port,
// named checks that count failures, greedy references from `tova run`, /metrics, RSS.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import assert from 'node:assert/strict';

export const [buildDir, model] = process.argv.slice(2);
export const tova = `${buildDir}/bin/tova`;
export const sanitized = process.env.TOVA_SANITIZE_RUN === '1';
// Wall-clock bounds of the tests (an abandoned request stops within 1 s, a 4xx comes within 2 s,
// ...) are multiplied by this: 4 under the sanitizers (~3-6x slower code on a loaded 2-core
// machine), else 1; TOVA_TEST_TIME_SCALE overrides. What a bound checks (promptness against a
// request of 200,000 tokens) holds at either scale.
export const timeScale = Number(process.env.TOVA_TEST_TIME_SCALE) || (sanitized ? 4 : 1);

// The npm package `name` (installed by scripts/setup.sh with `npm ci`), or exit 1 saying so.
export async function requireModule(name) {
  if (!existsSync(new URL(`./node_modules/${name}`, import.meta.url))) {
    console.error('tests/server/client/node_modules is missing: run scripts/setup.sh (npm ci)');
    process.exit(1);
  }
  return import(name);
}

// A test that cannot run here (a program, npm module or data folder is missing): says so in
// `line` and exits 77 (ctest: skipped), or 1 under CI=true, where scripts/setup.sh must have
// installed everything.
export function cannotRun(line) {
  console.log(process.env.CI === 'true' ? `${line} (CI=true: a failure, not a skip)` : line);
  process.exit(process.env.CI === 'true' ? 1 : 77);
}

// Exits 77 (ctest: skipped) with a line saying why: `program` is missing (scripts/setup.sh
// installs it from Debian), or the run is under the sanitizers, where this test adds nothing
// (`sanitizerReason` says why).
export function skipUnlessAvailable(program, test, sanitizerReason) {
  if (!existsSync(program)) {
    cannotRun(`${program} not found: the ${test} is skipped (scripts/setup.sh installs it)`);
  }
  if (sanitized) {
    console.log(`TOVA_SANITIZE_RUN=1: the ${test} is skipped (${sanitizerReason})`);
    process.exit(77);
  }
}

// A free loopback port (for a server that must keep one across a restart, or nginx).
export function freePort() {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

let failures = 0;
const only = process.env.TOVA_SERVER_TESTS ? new RegExp(process.env.TOVA_SERVER_TESTS) : null;

// Runs one named check; a failure is counted and printed, the next check still runs.
export async function check(name, fn) {
  if (only && !only.test(name)) return;
  const t0 = Date.now();
  try {
    await fn();
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failures++;
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
}

export function finish(what) {
  console.log(failures === 0 ? `all ${what} passed` : `${failures} ${what} failed`);
  process.exit(failures === 0 ? 0 : 1);
}

export const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

// Starts `tova serve` (any free port unless args name one) and resolves once it listens.
// Options: chatTemplate (default 'chatml'; null: none given), modelPath (default the test's
// model argument), timeoutMs.
export function startServer(args = [], { chatTemplate = 'chatml', env = {}, threads = '2',
  modelPath = model } = {}) {
  return new Promise((resolve, reject) => {
    const base = ['serve', '-m', modelPath, '-t', threads];
    if (!args.includes('--port')) base.push('--port', '0');
    if (chatTemplate) base.push('--chat-template', chatTemplate);
    const p = spawn(tova, [...base, ...args], { stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env } });
    let err = '';
    let out = '';
    const exited = new Promise((res) => p.on('exit', (code, sig) => res({ code, sig })));
    p.stderr.on('data', (d) => { err += d; });
    p.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) {
        resolve({ proc: p, url: m[1], port: Number(/:(\d+)$/.exec(m[1])[1]),
          stderr: () => err, exited });
      }
    });
    exited.then(({ code, sig }) => reject(new Error(`server exited ${code ?? sig}: ${err}`)));
  });
}

// Sends `signal` and resolves with the exit { code, sig }.
export async function stopServer(s, signal = 'SIGTERM') {
  if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill(signal);
  return s.exited;
}

// Runs `tova serve ARGS` expecting it to refuse to start: resolves with { code, stderr }, or
// rejects (after killing it) if it listens instead.
export function expectRefusal(args, timeoutMs = 20000) {
  return new Promise((resolve, reject) => {
    const p = spawn(tova, ['serve', '-m', model, '-t', '1', ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    let out = '';
    const timer = setTimeout(() => { p.kill('SIGKILL'); reject(new Error('still running')); },
      timeoutMs);
    p.stderr.on('data', (d) => { err += d; });
    p.stdout.on('data', (d) => {
      out += d;
      if (/listening on/.test(out)) {
        clearTimeout(timer);
        p.kill('SIGKILL');
        reject(new Error(`it started instead of refusing: ${out.trim()} ${err.trim()}`));
      }
    });
    p.on('exit', (code) => { clearTimeout(timer); resolve({ code, stderr: err }); });
  });
}

// What `tova run --temp 0` generates after `prompt` (the reference for greedy answers).
export function runGreedy(prompt, n, extra = []) {
  const out = execFileSync(tova, ['run', '-m', model, '-t', '1', '--temp', '0', '-n', String(n),
    '-p', prompt, ...extra], { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  assert.ok(out.startsWith(prompt));
  return out.slice(prompt.length).replace(/\n$/, '');
}

export async function health(url) {
  const r = await fetch(`${url}/health`);
  assert.equal(r.status, 200);
  assert.equal((await r.json()).status, 'ok');
}

export function rss(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]) * 1024;
}

export async function metrics(url, headers = {}) {
  const text = await (await fetch(`${url}/metrics`, { headers })).text();
  const get = (name) => {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    assert.ok(m, `metric ${name}`);
    return Number(m[1]);
  };
  return { text, get };
}

// Waits until `pred()` (async) is true, polling every `ms`, for at most `timeoutMs`.
export async function waitFor(pred, timeoutMs = 5000, ms = 50) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await pred()) return true;
    if (Date.now() > until) return false;
    await sleep(ms);
  }
}

// One raw HTTP exchange over a fresh TCP connection: writes `text`, resolves with what came
// back (status line parsed) when the server closes or `timeoutMs` passes.
export function rawRequest(port, text, timeoutMs = 5000) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let data = '';
    let error = null;
    const t0 = Date.now();
    const timer = setTimeout(() => sock.destroy(), timeoutMs);
    sock.on('connect', () => sock.write(text));
    sock.on('data', (d) => {
      data += d;
      // One whole response is enough (the server may keep the connection open).
      const head = data.indexOf('\r\n\r\n');
      if (head >= 0) {
        const len = /content-length:\s*(\d+)/i.exec(data.slice(0, head));
        if (len && data.length >= head + 4 + Number(len[1])) sock.end();
      }
    });
    sock.on('error', (e) => { error = e; });
    sock.on('close', () => {
      clearTimeout(timer);
      const m = /^HTTP\/1\.[01] (\d+)/.exec(data);
      resolve({ status: m ? Number(m[1]) : 0, data, error, ms: Date.now() - t0 });
    });
  });
}
