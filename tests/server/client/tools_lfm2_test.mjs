// LFM2's tool calls through `tova serve` with the real openai client and LFM2's own template
// (../shared/templates/LFM2-8B-A1B.jinja: the tools listed between <|tool_list_start|> and
// <|tool_list_end|>, the model answering <|tool_call_start|>[name(key=value)]<|tool_call_end|>):
// tool_choice "required" on a random-weight model gives forced calls whose arguments Debian's
// python3-jsonschema validates against the tool's schema, the same calls streamed as deltas,
// parallel calls in one block taken apart, and a tool result sent back.
// Usage: node tools_lfm2_test.mjs BUILD_DIR MODEL.gguf SCHEMA.json TEMPLATE.jinja  (exit 0: passed)
import { existsSync } from 'node:fs';
import assert from 'node:assert/strict';
import { check, finish, startServer, stopServer, requireModule, sanitized, cannotRun } from './lib.mjs';
import { testTools, validateCalls } from './tool_schemas.mjs';

const { default: OpenAI } = await requireModule('openai');
const [schemaPath, templatePath] = process.argv.slice(4);
if (!existsSync(templatePath)) {
  cannotRun(`${templatePath} not found (set TOVA_SHARED_DIR): skipped`);
}
const tools = testTools(schemaPath);

const s = await startServer(['--parallel', '8', '--kv-memory', '128M'],
  { chatTemplate: templatePath });
const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
const messages = [{ role: 'user', content: 'Save a person, please.' }];

const nForced = sanitized ? 4 : 24;
await check(`tool_choice required: ${nForced} of ${nForced} forced LFM2 calls are valid for their tool`,
  async () => {
    const calls = [];
    const batch = [];
    for (let seed = 0; seed < nForced; seed++) {
      batch.push(client.chat.completions.create({ model: 'x', max_tokens: 600, temperature: 1,
        seed, messages, tools, tool_choice: 'required', parallel_tool_calls: false }));
    }
    for (const r of await Promise.all(batch)) {
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
      assert.ok(!c.message.content, 'a forced answer is calls only');
      assert.equal(c.message.tool_calls.length, 1);
      assert.match(c.message.tool_calls[0].id, /^call_[A-Za-z0-9]{24}$/);
      calls.push([c.message.tool_calls[0].function.name, c.message.tool_calls[0].function.arguments]);
    }
    assert.equal(validateCalls(tools, calls), '', 'jsonschema found invalid arguments');
    assert.ok(calls.some((c) => c[0] === 'save_person') && calls.some((c) => c[0] === 'add'));
  });

await check('the tools are shown to the model (LFM2\'s tool list), none with tool_choice none',
  async () => {
    const plain = await client.chat.completions.create({ model: 'x', max_tokens: 1, messages });
    const none = await client.chat.completions.create({ model: 'x', max_tokens: 1, messages,
      tools, tool_choice: 'none' });
    const shown = await client.chat.completions.create({ model: 'x', max_tokens: 1, messages,
      tools });
    assert.equal(none.usage.prompt_tokens, plain.usage.prompt_tokens);
    assert.ok(shown.usage.prompt_tokens > plain.usage.prompt_tokens + 50);
  });

await check('parallel calls in one block, with text after them; streamed = whole', async () => {
  const grammar = 'root ::= "<|tool_call_start|>[add(a=" [1-9] ", b=" [1-9] "), ' +
    'add(a=" [1-9] ", b=-" [1-9] ")]<|tool_call_end|>Adding."';
  const body = { model: 'x', max_tokens: 200, temperature: 1, seed: 3, messages,
    tools: [tools[1]], grammar };
  const r = await client.chat.completions.create(body);
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.content, 'Adding.');
  assert.equal(c.message.tool_calls.length, 2);
  const second = JSON.parse(c.message.tool_calls[1].function.arguments);
  assert.ok(Number.isInteger(second.a) && second.b < 0, c.message.tool_calls[1].function.arguments);
  const deltas = [];
  for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
    const d = chunk.choices[0];
    if (d?.delta?.tool_calls) deltas.push(...d.delta.tool_calls);
  }
  for (let i = 0; i < 2; i++) {
    const mine = deltas.filter((d) => d.index === i);
    assert.ok(mine[0].id && mine[0].function.name === 'add');
    assert.equal(mine.map((d) => d.function.arguments ?? '').join(''),
      c.message.tool_calls[i].function.arguments);
  }
});

await check('a call and its tool result go back to the template', async () => {
  const first = await client.chat.completions.create({ model: 'x', max_tokens: 200,
    temperature: 1, seed: 5, messages, tools: [tools[1]], tool_choice: 'required',
    parallel_tool_calls: false });
  const m = first.choices[0].message;
  assert.equal(m.tool_calls?.length, 1, JSON.stringify(first.choices[0]));
  const history = [...messages, { role: 'assistant', content: '' },
    { role: 'tool', tool_call_id: m.tool_calls[0].id, content: '{"sum": 3}' }];
  const r = await client.chat.completions.create({ model: 'x', max_tokens: 4, temperature: 0,
    messages: history, tools: [tools[1]] });
  // The result is in the prompt, in <|tool_response_start|> ... <|tool_response_end|>.
  const base = await client.chat.completions.create({ model: 'x', max_tokens: 4, temperature: 0,
    messages: [...messages, { role: 'assistant', content: '' }], tools: [tools[1]] });
  assert.ok(r.usage.prompt_tokens > base.usage.prompt_tokens + 10);
});

await stopServer(s);
finish('LFM2 tool checks');
