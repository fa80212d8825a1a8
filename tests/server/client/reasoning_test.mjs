// Reasoning through `tova serve` with the real openai client, on the bundled model served with
// real thinking templates (../shared/templates: DeepSeek-R1, Qwen3, gpt-oss, Gemma 4): the answer is forced by a GBNF grammar into
// the shape a thinking model writes, and the server must return its reasoning as
// message.reasoning_content (streamed: delta.reasoning_content, before any content) and the rest
// as content; chat_template_kwargs and reasoning_effort reach the template; an assistant turn's
// reasoning_content is accepted back; bad switches are a 400 naming them.
// Usage: node reasoning_test.mjs BUILD_DIR MODEL.gguf SHARED_DIR     (exit 0: all passed)
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import assert from 'node:assert/strict';
import { check, finish, startServer, stopServer, requireModule, tova, model } from './lib.mjs';

const { default: OpenAI } = await requireModule('openai');
const templates = `${process.argv[4]}/templates`;
if (!existsSync(templates)) {
  console.log(`${templates} not found: skipped (set TOVA_SHARED_DIR)`);
  process.exit(process.env.CI === 'true' ? 1 : 77);
}

// GBNF for a literal answer.
const literal = (text) => `root ::= ${JSON.stringify(text)}`;
const user = [{ role: 'user', content: 'What is two and two?' }];

async function whole(client, extra) {
  const r = await client.chat.completions.create({ model: 'x', max_tokens: 200, temperature: 0,
    messages: user, ...extra });
  assert.equal(r.choices[0].finish_reason, 'stop', JSON.stringify(r.choices[0]));
  return r;
}

// The streamed answer: reasoning and content joined, and the order their chunks came in.
async function streamed(client, extra) {
  let reasoning = '';
  let content = '';
  let order = '';
  for await (const chunk of await client.chat.completions.create({ model: 'x', max_tokens: 200,
    temperature: 0, messages: user, stream: true, ...extra })) {
    const d = chunk.choices[0]?.delta ?? {};
    if (d.reasoning_content) { reasoning += d.reasoning_content; if (!order.endsWith('r')) order += 'r'; }
    if (d.content) { content += d.content; if (!order.endsWith('c')) order += 'c'; }
  }
  return { reasoning, content, order };
}

async function raw(url, body) {
  const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json(), id: r.headers.get('x-request-id') };
}

// The prompt a request was given: the pieces of the state it left.
async function promptOf(url, id) {
  const r = await fetch(`${url}/v1/sessions/${id}`);
  assert.equal(r.status, 200);
  return (await r.json()).pieces.join('');
}

// DeepSeek-R1 opens <think> in the prompt: the answer starts inside the block.
{
  const s = await startServer([], { chatTemplate: `${templates}/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja` });
  const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
  const grammar = literal('Two and two.\n</think>\n\nFour.');
  await check('think (opened in the prompt): reasoning_content and content, whole and streamed',
    async () => {
      const r = await whole(client, { grammar });
      const m = r.choices[0].message;
      assert.equal(m.reasoning_content, 'Two and two.');
      assert.equal(m.content, 'Four.');
      const st = await streamed(client, { grammar });
      assert.deepEqual(st, { reasoning: 'Two and two.', content: 'Four.', order: 'rc' });
    });
  await check('think: enable_thinking reaches the template (false closes the block in the prompt)',
    async () => {
      // (Each state looked at before the next request: the second may continue the first's.)
      const on = await raw(s.url, { messages: user, max_tokens: 1 });
      assert.equal(on.status, 200);
      const p = await promptOf(s.url, on.id);
      assert.ok(p.includes('<think>\n') && !p.includes('</think>'), p);
      const off = await raw(s.url, { messages: user, max_tokens: 1,
        chat_template_kwargs: { enable_thinking: false } });
      assert.equal(off.status, 200);
      assert.match(await promptOf(s.url, off.id), /<think>\n<\/think>/);
    });
  await stopServer(s);
}

// Qwen3 writes the block itself; thinking off is content only; an earlier turn's reasoning is
// dropped from the history as the template does.
{
  const s = await startServer([], { chatTemplate: `${templates}/Qwen-Qwen3-0.6B.jinja` });
  const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
  await check('think (written by the model): split whole and streamed', async () => {
    const grammar = literal('<think>\nLet me add.\n</think>\n\nIt is four.');
    const m = (await whole(client, { grammar })).choices[0].message;
    assert.equal(m.reasoning_content, 'Let me add.');
    assert.equal(m.content, 'It is four.');
    assert.deepEqual(await streamed(client, { grammar }),
      { reasoning: 'Let me add.', content: 'It is four.', order: 'rc' });
  });
  await check('think: an answer without a block has no reasoning_content', async () => {
    const m = (await whole(client, { grammar: literal('Four.'),
      chat_template_kwargs: { enable_thinking: false } })).choices[0].message;
    assert.equal(m.content, 'Four.');
    assert.equal(m.reasoning_content, undefined);
  });
  await check('an assistant turn given back with reasoning_content: the template drops it',
    async () => {
      const r = await raw(s.url, { max_tokens: 1, messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello.', reasoning_content: 'A greeting: greet back.' },
        { role: 'user', content: 'Bye' }] });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const prompt = await promptOf(s.url, r.id);
      assert.ok(prompt.includes('Hello.'), prompt);
      assert.ok(!prompt.includes('greet back'), prompt);
    });
  await check('bad switches: a 400 naming them', async () => {
    let r = await raw(s.url, { messages: user, reasoning_effort: 'extreme' });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.param, 'reasoning_effort');
    r = await raw(s.url, { messages: user, chat_template_kwargs: ['enable_thinking'] });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.param, 'chat_template_kwargs');
    const c = await fetch(`${s.url}/v1/completions`, { method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: 'Hi', reasoning_effort: 'low' }) });
    assert.equal(c.status, 400);
    assert.equal((await c.json()).error.param, 'reasoning_effort');
  });
  await stopServer(s);
}

// gpt-oss's harmony channels; reasoning_effort reaches its system message.
{
  const s = await startServer([], { chatTemplate: `${templates}/openai-gpt-oss-120b.jinja` });
  const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
  await check('harmony: analysis is reasoning_content, final is content, whole and streamed',
    async () => {
      const grammar = literal('<|channel|>analysis<|message|>Add them.<|end|><|start|>assistant' +
        '<|channel|>final<|message|>4');
      const m = (await whole(client, { grammar })).choices[0].message;
      assert.equal(m.reasoning_content, 'Add them.');
      assert.equal(m.content, '4');
      assert.deepEqual(await streamed(client, { grammar }),
        { reasoning: 'Add them.', content: '4', order: 'rc' });
    });
  await check('harmony: reasoning_effort sets the system message', async () => {
    const r = await raw(s.url, { messages: user, max_tokens: 1, reasoning_effort: 'high' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.match(await promptOf(s.url, r.id), /Reasoning: high/);
    const d = await raw(s.url, { messages: user, max_tokens: 1 });
    assert.match(await promptOf(s.url, d.id), /Reasoning: medium/);
  });
  await stopServer(s);
}

// Gemma 4's thought channel: "<|channel>thought\n...<channel|>" then the answer; thinking is on
// unless a request turns it off (the template then writes an empty channel in the prompt).
{
  const s = await startServer([], { chatTemplate: `${templates}/google-gemma-4-31B-it.jinja` });
  const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
  await check('gemma4: the thought channel is reasoning_content, whole and streamed', async () => {
    const grammar = literal('<|channel>thought\nAdd them.\n<channel|>Four.');
    const m = (await whole(client, { grammar })).choices[0].message;
    assert.equal(m.reasoning_content, 'Add them.');
    assert.equal(m.content, 'Four.');
    assert.deepEqual(await streamed(client, { grammar }),
      { reasoning: 'Add them.', content: 'Four.', order: 'rc' });
  });
  await check('gemma4: enable_thinking reaches the template (on by default; false: an empty channel)',
    async () => {
      const on = await raw(s.url, { messages: user, max_tokens: 1 });
      assert.equal(on.status, 200, JSON.stringify(on.body));
      const p = await promptOf(s.url, on.id);
      assert.ok(p.includes('<|think|>') && !p.includes('<|channel>'), p);
      const off = await raw(s.url, { messages: user, max_tokens: 1,
        chat_template_kwargs: { enable_thinking: false } });
      assert.equal(off.status, 200, JSON.stringify(off.body));
      const q = await promptOf(s.url, off.id);
      assert.ok(!q.includes('<|think|>') && q.includes('<|turn>model\n<|channel>thought\n<channel|>'), q);
      const m = (await whole(client, { grammar: literal('Four.'),
        chat_template_kwargs: { enable_thinking: false } })).choices[0].message;
      assert.equal(m.content, 'Four.');
      assert.equal(m.reasoning_content, undefined);
    });
  await stopServer(s);
}

// A hand-written family takes no switches; --reasoning-format none keeps the text whole.
{
  const s = await startServer(['--reasoning-format', 'none'],
    { chatTemplate: `${templates}/Qwen-Qwen3-0.6B.jinja` });
  const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
  await check('--reasoning-format none: the block stays in the content', async () => {
    const m = (await whole(client, { grammar: literal('<think>\nx\n</think>\n\ny') })).choices[0].message;
    assert.equal(m.content, '<think>\nx\n</think>\n\ny');
    assert.equal(m.reasoning_content, undefined);
  });
  await stopServer(s);
  const c = await startServer([]);  // chatml
  await check('a hand-written template refuses reasoning_effort with a 400 naming it', async () => {
    const r = await raw(c.url, { messages: user, reasoning_effort: 'low' });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.param, 'reasoning_effort');
  });
  await stopServer(c);
}

// tova chat (not a terminal): the reasoning between markers, or hidden.
await check('tova chat shows the reasoning apart, --hide-reasoning hides it', async () => {
  const chat = (...extra) => execFileSync(tova, ['chat', '-m', model, '-t', '1', '--temp', '0',
    '-n', '12', '--chat-template', `${templates}/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja`,
    ...extra], { input: 'Hi there\n', stdio: ['pipe', 'pipe', 'ignore'] }).toString();
  const shown = chat();
  const m = /\[reasoning\]\n([^]*)\n\[\/reasoning\]/.exec(shown);
  assert.ok(m && m[1].length > 0, shown);
  const hidden = chat('--hide-reasoning');
  assert.ok(!hidden.includes('[reasoning]') && !hidden.includes(m[1]), hidden);
});

finish('reasoning checks');
