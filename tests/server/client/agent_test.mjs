// A bounded agent end to end: the real openai client drives `tova serve` through a 30-turn
// tool loop (a fake tool answering locally) under --kv-policy tova --kv-budget 256, every call
// forced by the grammar (a named tool; greedy, so the fixture model is deterministic). Every
// call parses and validates, every turn after the first continues from the state the server
// held (usage.prompt_tokens_details.cached_tokens is the whole previous prompt), and memory
// stays flat: the multi-state holds at most 256 states per layer and its K/V bytes stop
// growing once the budget is reached, while the conversation grows past 3,000 tokens.
// Usage: node agent_test.mjs BUILD_DIR MODEL.gguf TEMPLATE.jinja   (exit 0: passed)
import { existsSync } from 'node:fs';
import assert from 'node:assert/strict';
import { check, finish, startServer, stopServer, requireModule, cannotRun } from './lib.mjs';

const { default: OpenAI } = await requireModule('openai');
const templatePath = process.argv[4];
if (!existsSync(templatePath)) {
  cannotRun(`${templatePath} not found (set TOVA_SHARED_DIR): skipped`);
}
const s = await startServer(['--kv-policy', 'tova', '--kv-budget', '256', '--kv-memory', '64M'],
  { chatTemplate: templatePath });
const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });

const tools = [{ type: 'function', function: { name: 'add', description: 'Add two numbers',
  parameters: { type: 'object', properties: { a: { type: 'integer', minimum: 0, maximum: 99 },
    b: { type: 'integer', minimum: 0, maximum: 99 } }, required: ['a', 'b'],
  additionalProperties: false } } }];
// The fake tool.
const add = ({ a, b }) => String(a + b);

await check('30 turns of forced calls under tova k=256: each parses, continues, stays bounded',
  async () => {
    const messages = [{ role: 'system', content: 'You add numbers with the add tool.' },
      { role: 'user', content: 'Add numbers until I say stop.' }];
    const turns = [];
    for (let turn = 0; turn < 30; turn++) {
      const r = await client.chat.completions.create({ model: 'x', messages, tools,
        tool_choice: { type: 'function', function: { name: 'add' } },
        parallel_tool_calls: false, temperature: 0, max_tokens: 120 });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'tool_calls', `turn ${turn}: ${JSON.stringify(c)}`);
      assert.equal(c.message.tool_calls.length, 1);
      const call = c.message.tool_calls[0];
      assert.equal(call.function.name, 'add');
      const args = JSON.parse(call.function.arguments);
      assert.deepEqual(Object.keys(args), ['a', 'b']);
      for (const v of Object.values(args)) assert.ok(Number.isInteger(v) && v >= 0 && v <= 99);
      turns.push({ usage: r.usage, kv: r.tova });
      messages.push(c.message);
      messages.push({ role: 'tool', tool_call_id: call.id, content: add(args) });
    }
    for (let t = 1; t < turns.length; t++) {
      // The whole previous prompt comes from the held state: only the answer and the tool's
      // result are new.
      assert.equal(turns[t].usage.prompt_tokens_details.cached_tokens,
        turns[t - 1].usage.prompt_tokens, `turn ${t}`);
    }
    const last = turns[turns.length - 1];
    assert.ok(last.usage.prompt_tokens > 3000, `the conversation grew: ${last.usage.prompt_tokens}`);
    const capped = turns.filter((t) => t.kv.tokens_seen > 256 + 120);
    assert.ok(capped.length >= 25);
    for (const t of turns) assert.ok(t.kv.states_held <= 256, JSON.stringify(t.kv));
    // Flat: the same K/V bytes on every turn once the budget is reached.
    assert.equal(new Set(capped.map((t) => t.kv.kv_bytes)).size, 1,
      capped.map((t) => t.kv.kv_bytes).join(' '));
    assert.ok(capped[0].kv.tokens_evicted > 0);
    console.log(`  last turn: ${last.usage.prompt_tokens} prompt tokens, ` +
      `${last.usage.prompt_tokens_details.cached_tokens} cached, ${last.kv.kv_bytes} K/V bytes, ` +
      `${last.kv.states_held} states held, ${last.kv.tokens_evicted} evicted`);
  });

await stopServer(s);
finish('agent checks');
