// Constrained output through `tova serve` with the real openai client: response_format
// json_schema on /v1/chat/completions (200 requests sampled at temperature 1 with different
// seeds, half of them streamed) gives JSON that Debian's python3-jsonschema validates, 200 of
// 200; llama.cpp's `grammar` field on /v1/completions (streamed and not); json_object; and a
// malformed schema or grammar is a 400 naming it.
// Usage: node grammar_test.mjs BUILD_DIR MODEL.gguf SCHEMA.json     (exit 0: all passed)
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { check, finish, startServer, stopServer, requireModule } from './lib.mjs';

const { default: OpenAI } = await requireModule('openai');
const schemaPath = process.argv[4];
const schema = JSON.parse(readFileSync(schemaPath, 'utf8'));

const s = await startServer(['--parallel', '16', '--kv-memory', '256M']);
const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });

// Every text validated by Debian's jsonschema (draft 2020-12, formats checked): the list of
// error lines it prints is empty when all are valid.
function validate(texts) {
  const script = `
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
v = cls(schema, format_checker=jsonschema.FormatChecker())
bad = 0
for i, t in enumerate(json.load(sys.stdin)):
    try:
        errs = [e.message for e in v.iter_errors(json.loads(t))]
    except ValueError as e:
        errs = ["not JSON: %s" % e]
    if errs:
        bad += 1
        print(i, repr(t), errs)
`;
  return execFileSync('/usr/bin/python3', ['-c', script, schemaPath],
    { input: JSON.stringify(texts), encoding: 'utf8' }).trim();
}

async function chatOnce(seed, stream) {
  const body = { model: 'x', max_tokens: 600, temperature: 1, seed,
    messages: [{ role: 'user', content: 'Describe a person as JSON.' }],
    response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema } } };
  if (!stream) {
    const r = await client.chat.completions.create(body);
    assert.equal(r.choices[0].finish_reason, 'stop', r.choices[0].message.content);
    return r.choices[0].message.content;
  }
  let text = '';
  let finishReason = null;
  for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
    const c = chunk.choices[0];
    if (c?.delta?.content) text += c.delta.content;
    if (c?.finish_reason) finishReason = c.finish_reason;
  }
  assert.equal(finishReason, 'stop', text);
  return text;
}

await check('response_format json_schema: 200 of 200 sampled outputs validate (half streamed)',
  async () => {
    const texts = [];
    for (let base = 0; base < 200; base += 16) {
      const batch = [];
      for (let i = base; i < Math.min(base + 16, 200); i++) batch.push(chatOnce(i, i % 2 === 1));
      texts.push(...await Promise.all(batch));
    }
    assert.equal(texts.length, 200);
    assert.equal(validate(texts), '', 'jsonschema found invalid outputs');
    assert.ok(new Set(texts).size > 150, 'the outputs are sampled, not one repeated');
  });

await check('grammar (GBNF) on completions, streamed and not', async () => {
  const grammar = 'root ::= "{\\"n\\": " [1-9] [0-9]? "}"';
  for (let seed = 0; seed < 8; seed++) {
    const r = await client.completions.create({ model: 'x', prompt: 'Once', max_tokens: 30,
      temperature: 1, seed, grammar });
    assert.match(r.choices[0].text, /^\{"n": [1-9][0-9]?\}$/);
    assert.equal(r.choices[0].finish_reason, 'stop');
    let text = '';
    for await (const c of await client.completions.create({ model: 'x', prompt: 'Once',
      max_tokens: 30, temperature: 1, seed, grammar, stream: true })) {
      text += c.choices[0]?.text ?? '';
    }
    assert.equal(text, r.choices[0].text, 'streamed = not streamed for one seed');
  }
});

await check('response_format json_object: every finished output is a JSON object', async () => {
  let finished = 0;
  for (let seed = 0; seed < 12; seed++) {
    const r = await client.chat.completions.create({ model: 'x', max_tokens: 200, temperature: 1,
      seed, messages: [{ role: 'user', content: 'JSON please' }],
      response_format: { type: 'json_object' } });
    const text = r.choices[0].message.content;
    assert.ok(text.startsWith('{'), text);
    if (r.choices[0].finish_reason === 'stop') {
      finished++;
      const v = JSON.parse(text);
      assert.equal(typeof v, 'object');
      assert.ok(v !== null && !Array.isArray(v));
    }
  }
  assert.ok(finished > 0, 'some outputs end within 200 tokens');
});

await check('a malformed schema or grammar is a 400 naming it', async () => {
  for (const [body, param, says] of [
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x',
      schema: { type: 'object', properties: { a: { type: 'string', format: 'email' } } } } } },
    'response_format', /\/properties\/a: format 'email' is not supported/],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x',
      schema: { $ref: '#/$defs/nope' } } } }, 'response_format', /does not resolve/],
    [{ grammar: 'root ::= "a" | b' }, 'grammar', /undefined rule 'b'/],
    [{ grammar: 'root ::= root "a"' }, 'grammar', /left-recursive/]]) {
    const e = await client.chat.completions.create({ model: 'x', max_tokens: 2,
      messages: [{ role: 'user', content: 'Hi' }], ...body }).catch((err) => err);
    assert.equal(e.status, 400, JSON.stringify(body));
    assert.equal(e.param, param);
    assert.match(e.message, says);
  }
});

await stopServer(s);
finish('grammar checks');
