// A hybrid model through `tova serve`: 20 chat turns on a hybrid fixture (qwen35: Gated
// DeltaNet layers; lfm2: short convolutions; granitehybrid: Mamba2; recurrent states that
// cannot be cut back to a shorter prefix) with the family's real template. Qwen3.5's next turn
// re-renders the answer without the think block the prompt opened (the boundary lies before
// it); LFM2's and Granite's render the answer where the prompt left off (the boundary is the
// prompt's end).
// Under tova k=16 and under full: every turn after the first continues from the checkpoint the
// server held at the previous turn's boundary (cached_tokens > 0: the previous prompt up to the
// answer's text, the same count of tokens short of it every turn), and every answer is the
// greedy text of a fresh `tova run` of the whole history under the same policy (`tova template`
// renders it, `tova run --chat-prompt` reads it as the server does). The responses' layer_kinds
// list every layer, the recurrent ones as such; /metrics has the recurrent kind's bytes.
// Usage: node hybrid_turns_test.mjs BUILD_DIR MODEL.gguf TEMPLATE.jinja LAYER_KINDS  (exit 0:
// passed); LAYER_KINDS: the model's layers, r (recurrent) or b (bounded), e.g. rrrbrrrb.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { check, finish, startServer, stopServer, metrics, model, tova, waitFor, cannotRun } from './lib.mjs';

const templatePath = process.argv[4];
if (!existsSync(templatePath)) {
  cannotRun(`${templatePath} not found (set TOVA_SHARED_DIR): skipped`);
}
const dir = mkdtempSync(join(tmpdir(), 'tova-hybrid-'));
const kwargs = { enable_thinking: false };
const maxTokens = 8;

// What a fresh `tova run` answers to the whole conversation (greedy, the same policy).
function freshRun(messages, policy, budget) {
  const file = join(dir, 'messages.json');
  writeFileSync(file, JSON.stringify(messages));
  const prompt = execFileSync(tova, ['template', '-m', model, '--template', templatePath,
    '--messages', file,
    '--var', 'enable_thinking=false'], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
  writeFileSync(join(dir, 'prompt.txt'), prompt);
  const cache = policy === 'full' ? ['--kv-policy', 'full']
    : ['--kv-policy', policy, '--kv-budget', String(budget)];
  return execFileSync(tova, ['run', '-m', model, '-t', '1', '--temp', '0', '-n', String(maxTokens),
    '--chat-prompt', '--no-display-prompt', '-f', join(dir, 'prompt.txt'), ...cache],
  { stdio: ['ignore', 'pipe', 'pipe'] }).toString().replace(/\n$/, '');
}

const layerKinds = [...(process.argv[5] ?? 'rrrbrrrb')].map((k) => (k === 'r' ? 'recurrent' : 'bounded'));
const nRecurrent = layerKinds.filter((k) => k === 'recurrent').length;

for (const [policy, budget] of [['tova', 16], ['full', 0]]) {
  const cache = policy === 'full' ? ['--kv-policy', 'full']
    : ['--kv-policy', policy, '--kv-budget', String(budget)];
  const s = await startServer([...cache, '--kv-memory', '64M'], { chatTemplate: templatePath });
  await check(`20 turns under ${policy}${budget ? ` k=${budget}` : ''}: each continues from a ` +
    'checkpoint and equals a fresh run of the whole history', async () => {
    const messages = [{ role: 'system', content: 'You are a helpful assistant.' }];
    const turns = [];
    for (let turn = 0; turn < 20; turn++) {
      messages.push({ role: 'user', content: `Question ${turn}: what comes after ${turn * 3}?` });
      const r = await fetch(`${s.url}/v1/chat/completions`, { method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ messages, max_tokens: maxTokens, temperature: 0,
          chat_template_kwargs: kwargs }) });
      assert.equal(r.status, 200, await r.clone().text());
      const j = await r.json();
      const m = j.choices[0].message;
      assert.ok(!m.reasoning_content, JSON.stringify(m));
      const want = freshRun(messages, policy, budget);
      assert.equal(m.content, want, `turn ${turn}`);
      assert.deepEqual(j.tova.layer_kinds, layerKinds);
      turns.push({ prompt: j.usage.prompt_tokens,
        cached: j.usage.prompt_tokens_details.cached_tokens, kv: j.tova });
      messages.push({ role: 'assistant', content: m.content });
    }
    assert.equal(turns[0].cached, 0);
    // The checkpoint of turn t - 1 lies where its prompt and turn t's part, the same number of
    // tokens short of the previous prompt every turn: for Qwen3.5 after
    // "<|im_start|>assistant\n", before the "<think>\n\n</think>\n\n" of the generation prompt
    // (17 here: the fixture's small vocabulary spells that think block in pieces, a real
    // Qwen3.5 one in ~6); for LFM2 and Granite at the prompt's end (0).
    const short = turns[0].prompt - turns[1].cached;
    assert.ok(short >= 0 && short < 24, `${short}`);
    for (let t = 1; t < turns.length; t++) {
      assert.ok(turns[t].cached > 0, `turn ${t}`);
      assert.equal(turns[t].cached, turns[t - 1].prompt - short, `turn ${t}`);
    }
    const last = turns[turns.length - 1];
    console.log(`  last turn: ${last.prompt} prompt tokens, ${last.cached} continued, ` +
      `${last.kv.kv_bytes} state bytes`);
    if (budget) {
      for (const t of turns) assert.ok(t.kv.states_held <= budget);
      const r = last.kv.memory_by_kind.find((k) => k.kind === 'recurrent');
      assert.equal(r.layers, nRecurrent);
      assert.equal(r.rows, 0);
    }
  });
  if (budget) {
    await check('/metrics and the state view show the recurrent kind', async () => {
      assert.ok(await waitFor(async () => (await metrics(s.url)).text.includes('kind="recurrent"')));
      const m = await metrics(s.url);
      const v = /^tova_state_bytes\{kind="recurrent"\} (\S+)$/m.exec(m.text);
      assert.ok(v && Number(v[1]) > 0, m.text);
    });
  }
  await stopServer(s);
}

rmSync(dir, { recursive: true, force: true });
finish('hybrid turn checks');
