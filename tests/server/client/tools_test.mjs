// Tool calling through `tova serve` with the real openai client, the chat rendered by a real
// template with tools (Qwen 2.5's, from ../shared/templates: Hermes <tool_call> calls):
// tool_choice "required" on a random-weight model gives 200 of 200 calls whose arguments
// Debian's python3-jsonschema validates against the tool's schema (half through the client's
// .stream() helper), parallel calls (two or more in one message, each with its own id and
// index), a named tool, "none", assistant tool_calls and tool results sent back, and a
// malformed tool, schema or choice is a 400 naming it.
// Usage: node tools_test.mjs BUILD_DIR MODEL.gguf SCHEMA.json TEMPLATE.jinja   (exit 0: passed)
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

const s = await startServer(['--parallel', '16', '--kv-memory', '256M'],
  { chatTemplate: templatePath });
const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
const messages = [{ role: 'user', content: 'Save a person, please.' }];

async function forced(seed, stream) {
  // One call an answer (parallel calls: the next checks), so max_tokens bounds it whole.
  const body = { model: 'x', max_tokens: 600, temperature: 1, seed, messages, tools,
    tool_choice: 'required', parallel_tool_calls: false };
  if (!stream) {
    const r = await client.chat.completions.create(body);
    return r.choices[0];
  }
  // The client's helper (openai 4.x: beta.chat.completions.stream) assembles the deltas.
  const st = client.beta.chat.completions.stream(body);
  let sawName = false;
  st.on('tool_calls.function.arguments.delta', () => { sawName = true; });
  const r = await st.finalChatCompletion();
  assert.ok(sawName, 'argument deltas were streamed');
  return r.choices[0];
}

// The count the issue asks for; under the sanitizers (a memory check, ~10x slower) 16 of them.
const nForced = sanitized ? 16 : 200;
await check(`tool_choice required: ${nForced} of ${nForced} forced calls are valid for their tool (half via .stream())`,
  async () => {
    const calls = [];
    for (let base = 0; base < nForced; base += 16) {
      const batch = [];
      for (let i = base; i < Math.min(base + 16, nForced); i++) batch.push(forced(i, i % 2 === 1));
      for (const c of await Promise.all(batch)) {
        assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
        assert.ok(c.message.tool_calls.length >= 1);
        assert.ok(!c.message.content, 'a forced answer is calls only');
        assert.equal(c.message.tool_calls.length, 1);
        const t = c.message.tool_calls[0];
        assert.equal(t.type, 'function');
        assert.match(t.id, /^call_[A-Za-z0-9]{24}$/);
        calls.push([t.function.name, t.function.arguments]);
      }
    }
    assert.equal(calls.length, nForced);
    assert.equal(validateCalls(tools, calls), '', 'jsonschema found invalid arguments');
    assert.ok(calls.some((c) => c[0] === 'save_person') && calls.some((c) => c[0] === 'add'));
    assert.ok(new Set(calls.map((c) => c[1])).size > nForced * 0.75, 'the arguments are sampled');
  });

await check('parallel calls: several in one message, distinct ids; streamed as indexed deltas',
  async () => {
    // The tiny model ends a forced turn after one call nearly always: a grammar (tool_choice
    // auto lets one through) makes it write two, in the template's own syntax, with text
    // before them; the parser takes them apart.
    const grammar = 'root ::= "Adding." call "\\n" call\n' +
      'call ::= "<tool_call>\\n{\\"name\\": \\"add\\", \\"arguments\\": {\\"a\\": " [1-9] ' +
      '", \\"b\\": " [1-9] "}}\\n</tool_call>"';
    const body = { model: 'x', max_tokens: 200, temperature: 1, seed: 7, messages,
      tools: [tools[1]], grammar };
    const r = await client.chat.completions.create(body);
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls');
    assert.equal(c.message.content, 'Adding.');
    assert.equal(c.message.tool_calls.length, 2);
    assert.notEqual(c.message.tool_calls[0].id, c.message.tool_calls[1].id);
    const deltas = [];
    let content = '';
    let finishReason = null;
    for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
      const d = chunk.choices[0];
      if (d?.delta?.tool_calls) deltas.push(...d.delta.tool_calls);
      if (d?.delta?.content) content += d.delta.content;
      if (d?.finish_reason) finishReason = d.finish_reason;
    }
    assert.equal(finishReason, 'tool_calls');
    assert.equal(content, 'Adding.');
    for (let i = 0; i < 2; i++) {
      const mine = deltas.filter((d) => d.index === i);
      assert.ok(mine[0].id && mine[0].function.name === 'add', 'the first delta: id and name');
      assert.equal(mine.map((d) => d.function.arguments ?? '').join(''),
        c.message.tool_calls[i].function.arguments, 'streamed = not streamed for one seed');
    }
    // The client's helper puts the same message together.
    const helped = await client.beta.chat.completions.stream(body).finalChatCompletion();
    assert.deepEqual(helped.choices[0].message.tool_calls.map((t) => t.function),
      c.message.tool_calls.map((t) => t.function));
  });

await check('parallel_tool_calls false and a named tool: exactly one call, of that tool', async () => {
  for (let seed = 0; seed < 16; seed++) {
    const r = await client.chat.completions.create({ model: 'x', max_tokens: 200, temperature: 1,
      seed, messages, tools, parallel_tool_calls: false,
      tool_choice: { type: 'function', function: { name: 'add' } } });
    const calls = r.choices[0].message.tool_calls;
    assert.equal(calls.length, 1);
    assert.equal(calls[0].function.name, 'add');
    const a = JSON.parse(calls[0].function.arguments);
    assert.ok(Number.isInteger(a.a) && Number.isInteger(a.b), calls[0].function.arguments);
  }
});

await check('tools with tool_choice auto (the default): an answer, calls or content', async () => {
  const r = await client.chat.completions.create({ model: 'x', max_tokens: 16, temperature: 0,
    messages, tools });
  const m = r.choices[0].message;
  assert.ok(typeof m.content === 'string' || m.tool_calls.length > 0);
  assert.ok(['stop', 'length', 'tool_calls'].includes(r.choices[0].finish_reason));
});

await check('tool_choice none: the tools are not shown to the model', async () => {
  const plain = await client.chat.completions.create({ model: 'x', max_tokens: 1, messages });
  const none = await client.chat.completions.create({ model: 'x', max_tokens: 1, messages, tools,
    tool_choice: 'none' });
  const shown = await client.chat.completions.create({ model: 'x', max_tokens: 1, messages, tools });
  assert.equal(none.usage.prompt_tokens, plain.usage.prompt_tokens);
  assert.ok(shown.usage.prompt_tokens > plain.usage.prompt_tokens + 50);
});

await check('assistant tool_calls and tool results go back to the template', async () => {
  const first = await client.chat.completions.create({ model: 'x', max_tokens: 200,
    temperature: 0, messages, tools, tool_choice: 'required', parallel_tool_calls: false });
  const m = first.choices[0].message;
  const history = [...messages, m,
    { role: 'tool', tool_call_id: m.tool_calls[0].id, content: '{"saved": true}' }];
  const r = await client.chat.completions.create({ model: 'x', max_tokens: 4, temperature: 0,
    messages: history, tools });
  // The call and the result are in the prompt: it grew by more than the call's tokens.
  assert.ok(r.usage.prompt_tokens > first.usage.prompt_tokens + first.usage.completion_tokens);
  const tokens = await (await fetch(`${s.url}/tokenize`, { method: 'POST',
    body: JSON.stringify({ content: '<tool_response>\n{"saved": true}\n</tool_response>' }) })).json();
  assert.ok(tokens.tokens.length > 0);
});

await check('a malformed tool, schema or choice is a 400 naming it', async () => {
  const add = tools[1];
  for (const [body, param, says] of [
    [{ tools: [{ type: 'function', function: { description: 'no name' } }] }, 'tools',
      /tools\[0\]\.function\.name/],
    [{ tools: [{ type: 'retrieval' }] }, 'tools', /tools\[0\]: expected/],
    [{ tools: [{ type: 'function', function: { name: 'f', parameters: 'x' } }] }, 'tools',
      /tools\[0\] \('f'\): 'parameters' must be/],
    [{ tools: [add, add] }, 'tools', /used twice/],
    [{ tools: [{ type: 'function', function: { name: 'mail', parameters: { type: 'object',
      properties: { to: { type: 'string', format: 'email' } } } } }], tool_choice: 'required' },
    'tools', /tools\[0\] \('mail'\): parameters: json_schema: \/properties\/to: format 'email'/],
    [{ tools: [add], tool_choice: { type: 'function', function: { name: 'nope' } } },
      'tool_choice', /'nope', which is not in 'tools'/],
    [{ tools: [add], tool_choice: 'sometimes' }, 'tool_choice', /sometimes/],
    [{ tool_choice: 'required' }, 'tool_choice', /needs 'tools'/],
    [{ tools: [add], tool_choice: 'required', grammar: 'root ::= "a"' }, 'tool_choice',
      /together/],
    [{ tools: [add], parallel_tool_calls: 'yes' }, 'parallel_tool_calls', /boolean/],
    [{ messages: [{ role: 'tool', content: 'x' }] }, 'messages', /tool_call_id/],
    [{ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function',
      function: { name: 'f', arguments: '{not json' } }] }] }, 'messages', /arguments/]]) {
    const e = await client.chat.completions.create({ model: 'x', max_tokens: 2, messages,
      ...body }).catch((err) => err);
    assert.equal(e.status, 400, JSON.stringify(body));
    assert.equal(e.param, param, JSON.stringify(body));
    assert.match(e.message, says);
  }
});

await stopServer(s);
finish('tool checks');
