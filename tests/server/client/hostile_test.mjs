// A hostile model through `tova serve` (issue 49): --debug-hostile-output makes every generated
// piece of text hostile bytes (apps/server/hostile_output.h: broken UTF-8, half and nested
// markers, unclosed tags, calls of every format with broken bytes, huge arguments), served with
// the real chat template of every tool-call and reasoning format (../shared/templates), and
// asked through the real openai client and Node's fetch: whole and streamed, n = 2, with tools
// (auto and forced by a grammar), with a GBNF grammar, and plain completions. Every answer is a
// 200 whose body (or every event) is JSON with what could be parsed; never a 500, never a
// crash. The reproducer (piece 0 of the choice whose seed is 0) comes back as a call
// with its bytes replaced by U+FFFD. Prints the counts.
// Usage: node hostile_test.mjs BUILD_DIR MODEL.gguf SHARED_DIR     (exit 0: all passed)
import { existsSync } from 'node:fs';
import assert from 'node:assert/strict';
import { check, finish, startServer, stopServer, requireModule, sanitized } from './lib.mjs';

const { default: OpenAI } = await requireModule('openai');
const templates = `${process.argv[4]}/templates`;
if (!existsSync(templates)) {
  console.log(`${templates} not found: skipped (set TOVA_SHARED_DIR)`);
  process.exit(process.env.CI === 'true' ? 1 : 77);
}

// One template per format the server speaks: [file, tool-call format, reasoning format].
const allFormats = [
  ['chatml', 'none', 'none'],
  ['Qwen-Qwen2.5-7B-Instruct.jinja', 'hermes', 'none'],
  ['Qwen3-Coder.jinja', 'qwen3_coder', 'none'],
  ['Qwen-Qwen3-0.6B.jinja', 'hermes', 'think'],
  ['deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja', 'none', 'think (opened in the prompt)'],
  ['meta-llama-Llama-3.1-8B-Instruct.jinja', 'llama3', 'none'],
  ['mistralai-Mistral-Nemo-Instruct-2407.jinja', 'mistral', 'none'],
  ['Mistral-Small-3.2-24B-Instruct-2506.jinja', 'mistral_args', 'none'],
  ['openai-gpt-oss-120b.jinja', 'harmony', 'harmony'],
  ['google-gemma-4-31B-it.jinja', 'none', 'gemma4'],
];
// Under the sanitizers (several times slower) the C++ test (HostileModel.*) covers every format
// pair; here four templates: no format, Qwen3-Coder (the reproducer), think + Hermes, harmony.
const formats = sanitized
  ? allFormats.filter(([f]) => /^(chatml|Qwen3-Coder|Qwen-Qwen3-0.6B|openai-gpt-oss)/.test(f))
  : allFormats;
// (gpt-oss's template reads a description.)
const tools = [{ type: 'function', function: { name: 'f', description: 'f', parameters: {
  type: 'object', properties: { s: { type: 'string' } } } } }];
const user = [{ role: 'user', content: 'Call f.' }];
const R = '\uFFFD';
// Seeds per template (choice i starts with whole turn seed + i of the generator's 9, then
// differs by seed): fewer under the sanitizers, where a request costs several times more.
const nSeeds = sanitized ? 2 : 5;
const counts = { answers: 0, events: 0, calls: 0, reasoning: 0, serverErrors: 0, other: 0 };

// A request through fetch: the status, and the body read as JSON (whole) or as events.
async function raw(url, path, body) {
  const r = await fetch(`${url}${path}`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  if (r.status >= 500) counts.serverErrors++;
  assert.equal(r.status, 200, `${path} ${JSON.stringify(body).slice(0, 200)}: ${text.slice(0, 300)}`);
  counts.answers++;
  if (!body.stream) return JSON.parse(text);
  const events = text.split('\n\n').filter((e) => e.length > 0);
  assert.equal(events.at(-1), 'data: [DONE]');
  const out = events.slice(0, -1).map((e) => {
    assert.ok(e.startsWith('data: '), e.slice(0, 100));
    return JSON.parse(e.slice(6));
  });
  for (const e of out) assert.equal(e.error, undefined, JSON.stringify(e.error));
  counts.events += out.length;
  return out;
}

function checkCalls(calls) {
  for (const c of calls ?? []) {
    counts.calls++;
    // A stream sends a call's name in its first delta, its arguments in the next.
    if (c.function.name !== undefined) assert.equal(typeof c.function.name, 'string');
    if (c.function.arguments) assert.equal(typeof JSON.parse(c.function.arguments), 'object');
  }
}

for (const [file, toolFormat, reasoningFormat] of formats) {
  const template = file === 'chatml' ? 'chatml' : `${templates}/${file}`;
  if (file !== 'chatml' && !existsSync(template)) throw new Error(`${template} missing`);
  const s = await startServer(['--debug-hostile-output', '49', '--parallel', '8'],
    { chatTemplate: template });
  const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
  const withTools = toolFormat !== 'none';
  const name = `${file} (tools ${toolFormat}, reasoning ${reasoningFormat})`;
  const base = { model: 'x', messages: user, max_tokens: 24, n: 2, ignore_eos: true };
  await check(`${name}: whole and streamed, n = 2, ${nSeeds} seeds, every answer a 200`, async () => {
    for (let k = 0; k < nSeeds; k++) {
      const seed = (allFormats.findIndex((f) => f[0] === file) * nSeeds + k) % 9;
      const extra = withTools ? { tools } : {};
      const r = await client.chat.completions.create({ ...base, seed, ...extra });
      counts.answers++;
      assert.equal(r.choices.length, 2);
      for (const c of r.choices) {
        checkCalls(c.message.tool_calls);
        if (c.message.reasoning_content) counts.reasoning++;
      }
      const events = await raw(s.url, '/v1/chat/completions', { ...base, seed, stream: true,
        ...extra });
      for (const e of events) for (const c of e.choices) checkCalls(c.delta?.tool_calls);
    }
  });
  await check(`${name}: with grammars (GBNF, and a call forced by tool_choice)`, async () => {
    await raw(s.url, '/v1/chat/completions', { ...base, seed: 3, grammar: 'root ::= [a-z ]+' });
    await raw(s.url, '/v1/chat/completions', { ...base, seed: 4, stream: true,
      response_format: { type: 'json_object' } });
    if (withTools) {
      for (const stream of [false, true]) {
        const r = await raw(s.url, '/v1/chat/completions', { ...base, seed: 5, stream, tools,
          tool_choice: 'required' });
        if (!stream) for (const c of r.choices) checkCalls(c.message.tool_calls);
      }
    }
  });
  if (file === 'chatml') {
    await check('completions (no chat format): whole and streamed, n = 2', async () => {
      for (const stream of [false, true]) {
        await raw(s.url, '/v1/completions', { model: 'x', prompt: 'Once', max_tokens: 24, n: 2,
          seed: 7, stream, logprobs: 2, ignore_eos: true });
      }
    });
  }
  if (toolFormat === 'qwen3_coder') {
    await check('the reproducer of issue 49 is a call with its bytes replaced (200)', async () => {
      // Seed 0: choice 0's first piece is the reproducer; max_tokens 2 adds one more piece.
      const r = await client.chat.completions.create({ model: 'x', messages: user, tools,
        seed: 0, max_tokens: 2, ignore_eos: true });
      counts.answers++;
      const call = r.choices[0].message.tool_calls[0];
      assert.equal(call.function.name, 'f');
      assert.deepEqual(JSON.parse(call.function.arguments), { s: `1${R}${R}${R}` });
      assert.equal(r.choices[0].finish_reason, 'length');  // max_tokens ended the turn
    });
  }
  // Still alive and answering.
  const h = await fetch(`${s.url}/health`);
  assert.equal(h.status, 200);
  const exit = await stopServer(s);
  assert.equal(exit.code, 0, s.stderr().slice(-2000));
  if (/ERROR: AddressSanitizer|runtime error:/.test(s.stderr())) {
    counts.other++;
    console.log(s.stderr().slice(-3000));
  }
}
console.log(`hostile model: ${counts.answers} answers (${counts.events} stream events, ` +
  `${counts.calls} calls, ${counts.reasoning} choices with reasoning) over ${formats.length} ` +
  `templates, ${counts.serverErrors} server errors, ${counts.other} sanitizer reports`);
await check('no server error, no sanitizer report', async () => {
  assert.equal(counts.serverErrors, 0);
  assert.equal(counts.other, 0);
});
finish('hostile-model checks');
