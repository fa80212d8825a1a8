// tova serve and tova chat between requests: every thread asleep and ~0 % CPU (issue 23
// item 4). A worker pool that spins or yields while it waits would show here as one busy
// core: ~200 clock ticks in the 2 s measured, against a limit of 10.
//
//   node idle_test.mjs BUILD_DIR MODEL
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import assert from 'node:assert/strict';
import { check, finish, model, sleep, startServer, stopServer, tova, waitFor } from './lib.mjs';

const kMeasureMs = 2000;
const kMaxTicks = 10;  // 0.1 s of CPU in 2 s: 5 % of one core

// The fields of /proc/PID[/task/TID]/stat after the command name (which may hold spaces).
function statFields(path) {
  const s = readFileSync(path, 'utf8');
  return s.slice(s.lastIndexOf(')') + 2).split(' ');
}

// utime + stime of the whole process, in clock ticks.
function cpuTicks(pid) {
  const f = statFields(`/proc/${pid}/stat`);
  return Number(f[11]) + Number(f[12]);
}

// The state letter of every thread of the process ('R' running, 'S' sleeping, ...).
function threadStates(pid) {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    try {
      return statFields(`/proc/${pid}/task/${tid}/stat`)[0];
    } catch {
      return 'S';  // the thread ended between the listing and the read
    }
  });
}

// Waits (up to 10 s: a loaded machine may not schedule the threads at once) until every thread
// of `pid` sleeps, then measures its CPU over kMeasureMs.
async function idleTicks(pid, what) {
  const asleep = await waitFor(() => threadStates(pid).every((s) => s === 'S'), 10000, 20);
  assert.ok(asleep, `${what}: threads not asleep after 10 s: ${threadStates(pid).join('')}`);
  const t0 = cpuTicks(pid);
  await sleep(kMeasureMs);
  const ticks = cpuTicks(pid) - t0;
  console.log(`     ${what}: ${threadStates(pid).length} threads asleep, ${ticks} clock ticks ` +
    `of CPU in ${kMeasureMs} ms idle`);
  assert.ok(ticks <= kMaxTicks, `${what}: ${ticks} clock ticks in ${kMeasureMs} ms idle ` +
    `(limit ${kMaxTicks})`);
}

async function complete(url) {
  const r = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 24, temperature: 0 }),
  });
  assert.equal(r.status, 200);
  const body = await r.json();
  assert.ok(body.choices[0].text.length > 0);
  return body.choices[0].text;
}

await check('tova serve -t 2: after a request every thread sleeps, ~0 % CPU; the next ' +
  'request is answered the same', async () => {
  const s = await startServer([], { threads: '2' });
  try {
    const first = await complete(s.url);
    await idleTicks(s.proc.pid, 'serve');
    assert.equal(await complete(s.url), first);
    await idleTicks(s.proc.pid, 'serve, after a second request');
  } finally {
    await stopServer(s);
  }
});

await check('tova chat -t 2: waiting for the next line every thread sleeps, ~0 % CPU',
  async () => {
    const p = spawn(tova, ['chat', '-m', model, '-t', '2', '--temp', '0', '-n', '16',
      '--chat-template', 'chatml'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    const exited = new Promise((res) => p.on('exit', (code, sig) => res({ code, sig })));
    try {
      // "> " is the prompt for a line; the answer ends with a newline and the next prompt.
      const prompts = () => out.split('> ').length - 1;
      assert.ok(await waitFor(() => prompts() >= 1, 30000), `no prompt: ${out} ${err}`);
      p.stdin.write('hello\n');
      assert.ok(await waitFor(() => prompts() >= 2, 30000), `no answer: ${out} ${err}`);
      await idleTicks(p.pid, 'chat');
      p.stdin.write('/quit\n');
      const { code } = await exited;
      assert.equal(code, 0, err);
    } finally {
      if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    }
  });

finish('idle checks');
