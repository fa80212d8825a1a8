// Images through `tova serve --mmproj` (the gemma4 text fixture and the gemma4v mmproj fixture of
// tests/data): OpenAI image_url parts as data: URLs with the real openai client, a second
// question about the same image continuing the first's held state (the image not fed again), a
// bounded policy holding its budget through the image, and a 400 naming the field for each limit
// (bytes, pixels, images per request), a remote URL, bytes that are not an image, and image parts
// sent to a server without --mmproj; the web page's Image button in Debian's chromium.
// Usage: node image_test.mjs BUILD_DIR GEMMA4.gguf VISION_DIR     (exit 0: all passed)
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { check, finish, requireModule, startServer, stopServer } from './lib.mjs';

const visionDir = process.argv[4];
const { default: OpenAI } = await requireModule('openai');
const dataUrl = (file, mime) =>
  `data:${mime};base64,${readFileSync(`${visionDir}/${file}`).toString('base64')}`;
const disc = dataUrl('disc-64x48.png', 'image/png');        // 48 image tokens, 3072 pixels
const bars = dataUrl('bars-50x30.jpg', 'image/jpeg');       // 45 image tokens
const scene = dataUrl('scene-300x200.jpg', 'image/jpeg');   // 60000 pixels
const imagePart = (url) => ({ type: 'image_url', image_url: { url } });
const ask = (parts) => [{ role: 'user', content: parts }];

const s = await startServer(['--mmproj', `${visionDir}/gemma4v-f32.gguf`, '--image-max-count', '2',
  '--image-max-pixels', '20000', '--image-max-bytes', '64K']);
const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });

async function post(body) {
  const r = await fetch(`${s.url}/v1/chat/completions`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ max_tokens: 4, temperature: 0, ...body }) });
  return { status: r.status, body: await r.json() };
}

await check('an image_url part answers, the same request gives the same answer', async () => {
  const messages = ask([{ type: 'text', text: 'What is this?' }, imagePart(disc)]);
  const a = await client.chat.completions.create({ model: 'x', messages, max_tokens: 6,
    temperature: 0 });
  assert.equal(a.choices.length, 1);
  assert.ok(a.usage.prompt_tokens > 48, JSON.stringify(a.usage));
  const b = await client.chat.completions.create({ model: 'x', messages, max_tokens: 6,
    temperature: 0 });
  assert.equal(b.choices[0].message.content, a.choices[0].message.content);
  // Streamed: the same text.
  const stream = await client.chat.completions.create({ model: 'x', messages, max_tokens: 6,
    temperature: 0, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, a.choices[0].message.content);
});

await check('a second question about the image continues the held state', async () => {
  const first = ask([imagePart(bars), { type: 'text', text: 'Describe it.' }]);
  const r1 = await post({ messages: first, max_tokens: 5 });
  assert.equal(r1.status, 200, JSON.stringify(r1.body));
  const answer = r1.body.choices[0].message.content;
  const second = [...first, { role: 'assistant', content: answer },
    { role: 'user', content: 'And its colours?' }];
  const r2 = await post({ messages: second, max_tokens: 5 });
  assert.equal(r2.status, 200, JSON.stringify(r2.body));
  // The image's 45 tokens are in what was reused: nothing of it was fed again.
  assert.ok(r2.body.tova.reused_prompt_tokens > 45, JSON.stringify(r2.body.tova));
});

await check('two images under tova k=16: every layer holds its budget', async () => {
  const r = await post({ messages: ask([imagePart(disc), { type: 'text', text: 'and' },
    imagePart(bars)]), kv_policy: 'tova', kv_budget: 16, cache_prompt: false });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  for (const k of r.body.tova.memory_by_kind) {
    assert.ok(k.limit === null || k.max_held <= k.limit, JSON.stringify(k));
  }
  assert.ok(r.body.tova.tokens_seen > 93);
});

await check('kv_keep_images: both images held beside tova k=16, counted in /metrics', async () => {
  const r = await post({ messages: ask([imagePart(disc), { type: 'text', text: 'and' },
    imagePart(bars)]), kv_policy: 'tova', kv_budget: 16, kv_keep_images: true,
    cache_prompt: false });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const bounded = r.body.tova.memory_by_kind.find((k) => k.kind === 'bounded');
  assert.ok(bounded.image_rows >= 93, JSON.stringify(bounded));
  assert.equal(bounded.max_held, 16 + 93, JSON.stringify(bounded));
  const bad = await post({ messages: ask([{ type: 'text', text: 'x' }]), kv_keep_images: 'yes' });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.param, 'kv_keep_images');
  const metrics = await (await fetch(`${s.url}/metrics`)).text();
  assert.match(metrics, /tova_state_image_rows\{kind="bounded"\} \d+/);
});

await check('each limit and hostile part is a 400 naming the field', async () => {
  const cases = [
    [[imagePart('https://example.com/cat.png')], 'messages[0].content[0].image_url.url', 'remote'],
    [[imagePart(disc), imagePart(disc), imagePart(disc)], 'messages[0].content[2].image_url',
      '--image-max-count'],
    [[imagePart(scene)], 'messages[0].content[0].image_url.url', '--image-max-pixels'],
    [[imagePart(`data:image/png;base64,${Buffer.alloc(70000, 1).toString('base64')}`)],
      'messages[0].content[0].image_url.url', '--image-max-bytes'],
    [[imagePart(`data:image/png;base64,${Buffer.from('not an image at all').toString('base64')}`)],
      'messages[0].content[0].image_url.url', 'not an image'],
    [[imagePart('data:image/png;base64,@@@@')], 'messages[0].content[0].image_url.url', 'base64'],
    [[imagePart(disc.slice(0, 200))], 'messages', 'image 1'],  // a truncated PNG
    [[{ type: 'image_url' }], 'messages[0].content[0].image_url', 'url'],
  ];
  for (const [parts, param, words] of cases) {
    const r = await post({ messages: ask(parts) });
    assert.equal(r.status, 400, `${param}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.param, param, JSON.stringify(r.body));
    assert.ok(r.body.error.message.includes(words), JSON.stringify(r.body));
  }
  // The server still answers.
  assert.equal((await post({ messages: ask([imagePart(disc)]) })).status, 200);
});

// The web page's Image button: a file attached to the next message goes as an image_url part.
// In Debian's chromium (headless, playwright-core); where it is missing the check says so (a
// failure under CI=true, where scripts/setup.sh installs it).
const chromiumPath = process.env.TOVA_CHROMIUM || '/usr/bin/chromium';
if (!existsSync(chromiumPath)) {
  console.log(`skip the page's Image button: ${chromiumPath} is missing`);
  if (process.env.CI === 'true') process.exit(1);
} else {
  await check("the page's Image button sends the image with the next message", async () => {
    const { chromium } = await requireModule('playwright-core');
    const profile = mkdtempSync(join(tmpdir(), 'tova-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath, headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });
    try {
      const page = context.pages()[0] ?? await context.newPage();
      const sent = [];
      page.on('request', (r) => { if (r.method() === 'POST') sent.push(r.postData() ?? ''); });
      await page.goto(s.url);
      await page.fill('#max-tokens', '4');
      await page.click('#new');
      await page.setInputFiles('#image-file', `${visionDir}/disc-64x48.png`);
      await page.waitForFunction(() => document.getElementById('attached').textContent.length > 0);
      await page.fill('#input', 'What is this?');
      await page.click('#send');
      await page.waitForSelector('.msg.assistant.done', { timeout: 30000 });
      const done = page.locator('.msg.assistant.done').last();
      assert.ok(!(await done.evaluate((e) => e.classList.contains('error'))),
        await done.textContent());
      assert.match(await page.locator('.msg.user').last().textContent(), /\[image disc-64x48\.png\]/);
      const body = JSON.parse(sent.find((b) => b.includes('image_url')));
      assert.equal(body.messages.at(-1).content[0].type, 'image_url');
      assert.ok(body.messages.at(-1).content[0].image_url.url.startsWith('data:image/png;base64,'));
      assert.equal(await page.textContent('#attached'), '');
    } finally {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    }
  });
}

await stopServer(s);

await check('without --mmproj an image part is a 400 naming --mmproj', async () => {
  const plain = await startServer([]);
  const r = await fetch(`${plain.url}/v1/chat/completions`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: ask([imagePart(disc)]), max_tokens: 2 }) });
  const body = await r.json();
  assert.equal(r.status, 400);
  assert.equal(body.error.param, 'messages[0].content[0].image_url');
  assert.ok(body.error.message.includes('--mmproj'), JSON.stringify(body));
  const keep = await fetch(`${plain.url}/v1/chat/completions`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }], max_tokens: 2,
      kv_keep_images: true }) });
  const keepBody = await keep.json();
  assert.equal(keep.status, 400);
  assert.equal(keepBody.error.param, 'kv_keep_images');
  assert.ok(keepBody.error.message.includes('--mmproj'), JSON.stringify(keepBody));
  await stopServer(plain);
});

finish('image checks');
