// The web page at `/` in a real browser: Debian's chromium, headless, driven by playwright-core
// (no browser is downloaded). A conversation under one policy and budget, streamed, a second turn
// that continues the held state, a second conversation under another policy, and the state view
// (states held and evicted per layer, which earlier tokens are still held). Every request the
// page makes goes to the server itself; no console error (a CSP violation is one).
// Then, served with a thinking template (DeepSeek-R1's, which opens <think> in the prompt), the
// answer streams as reasoning into a <details> box, closed once the answer is done.
// Usage: node browser_test.mjs BUILD_DIR MODEL.gguf [SHARED_DIR]   (exit 0 passed, 77 skipped)
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import {
  check, finish, startServer, stopServer, skipUnlessAvailable, requireModule,
} from './lib.mjs';

const chromiumPath = process.env.TOVA_CHROMIUM || '/usr/bin/chromium';
skipUnlessAvailable(chromiumPath, 'browser test', 'it checks the page, not memory; the server ' +
  'code it drives runs under the sanitizers in ServerOperations and ServerSoak');
const { chromium } = await requireModule('playwright-core');

const server = await startServer(['--max-tokens', '512'], { chatTemplate: null });
const profile = mkdtempSync(join(tmpdir(), 'tova-chromium-'));
let context = null;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = context.pages()[0] ?? await context.newPage();
  const elsewhere = [];
  const consoleErrors = [];
  const servers = [server.url];  // the page's own servers (a second one below)
  page.on('request', (r) => {
    if (!servers.some((u) => r.url().startsWith(u))) elsewhere.push(r.url());
  });
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  const info = (await (await fetch(`${server.url}/v1/models`)).json()).data[0];

  await check('the page loads from the binary and lists every registered policy', async () => {
    await page.goto(server.url);
    await page.waitForFunction(() => document.getElementById('model').textContent.length > 0);
    assert.equal(await page.textContent('#model'), info.id);
    const options = await page.$$eval('#policy option', (os) => os.map((o) => o.value));
    assert.deepEqual(options, info.tova.policies.map((p) => p.name));
    assert.ok(options.includes('tova') && options.includes('full'));
  });

  const ask = async (text) => {
    const before = await page.$$eval('.msg.assistant.done', (ms) => ms.length);
    await page.fill('#input', text);
    await page.click('#send');
    await page.waitForFunction((n) => document.querySelectorAll('.msg.assistant.done').length > n,
      before, { timeout: 30000 });
    const last = page.locator('.msg.assistant.done').last();
    return { text: await last.locator('.body').textContent(),
      meta: await last.locator('.meta').last().textContent(),
      error: await last.evaluate((e) => e.classList.contains('error')) };
  };
  const tokensHeld = () => page.$$eval('#tokens span', (ss) => ss.map((s) => Number(s.dataset.held)));

  await check('a tova k=16 conversation: streamed answer, state per layer, tokens shaded', async () => {
    await page.selectOption('#policy', 'tova');
    await page.fill('#budget', '16');
    await page.fill('#max-tokens', '48');
    await page.fill('#temperature', '0');
    await page.click('#new');
    const a = await ask('Tell me a story about a little cat who finds a red ball in the garden.');
    assert.ok(!a.error, a.meta);
    assert.ok(a.text.length > 0, 'an answer');
    assert.match(a.meta, /tokens, prompt \d+ \(0 continued from the held state\), 16 states held/);
    await page.waitForFunction(() => document.querySelectorAll('#layers .layer').length > 0);
    const layers = await page.$$eval('#layers .layer', (ls) => ls.map((l) => ({
      held: Number(l.dataset.held), evicted: Number(l.dataset.evicted) })));
    assert.equal(layers.length, info.tova.n_layer);
    for (const l of layers) {
      assert.equal(l.held, 16);
      assert.ok(l.evicted > 0);
    }
    const held = await tokensHeld();
    const pairs = info.tova.n_layer * info.tova.n_head_kv;
    assert.ok(held.length > 32, `${held.length} tokens shown`);
    assert.ok(held.some((h) => h === 0), 'some earlier tokens were evicted everywhere');
    assert.ok(held.some((h) => h > 0), 'some are held');
    assert.ok(held.every((h) => h >= 0 && h <= pairs));
    // Each layer holds 16 states: the held counts add up to 16 per (layer, KV head).
    assert.equal(held.reduce((a, b) => a + b, 0), 16 * pairs);
    assert.match(await page.textContent('[data-field="policy"]'), /^tova k=16 \(exact, absolute\)/);
    // Memory by layer kind: every layer of this model is bounded K/V.
    assert.match(await page.textContent('[data-field="bounded K/V"]'),
      new RegExp(`^${info.tova.n_layer} layers, at most 16: 16 held, ${16 * pairs} rows, `));
    assert.match(await page.textContent('[data-field="status"]'), /held for the next turn/);
  });

  await check('the second turn continues the held state (cached tokens > 0)', async () => {
    const b = await ask('What did the cat do next?');
    assert.ok(!b.error, b.meta);
    const m = /\((\d+) continued from the held state\)/.exec(b.meta);
    assert.ok(m && Number(m[1]) > 0, b.meta);
    assert.ok((await tokensHeld()).length > 60);
  });

  await check('a second conversation keeps its own policy (window k=8); switching back', async () => {
    await page.selectOption('#policy', 'window');
    await page.fill('#budget', '8');
    await page.click('#new');
    const c = await ask('Once upon a time there was a dog.');
    assert.ok(!c.error, c.meta);
    assert.match(await page.textContent('[data-field="policy"]'), /^window k=8/);
    const held = await tokensHeld();
    // A window holds the last 8 positions in every layer, nothing before them.
    const pairs = info.tova.n_layer * info.tova.n_head_kv;
    assert.deepEqual(held.slice(-8), Array(8).fill(pairs));
    assert.ok(held.slice(0, -8).every((h) => h === 0));
    assert.equal(await page.$$eval('#conversations li', (ls) => ls.length), 2);
    await page.click('#conversations li >> nth=0');
    await page.waitForFunction(() => /^tova k=16/.test(
      document.querySelector('[data-field="policy"]')?.textContent ?? ''));
    assert.equal(await page.$$eval('.msg.assistant', (ms) => ms.length), 2);
  });

  // The bundled model writes no </think>: everything it answers is reasoning.
  const deepseek = `${process.argv[4]}/templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja`;
  if (process.argv[4] && existsSync(deepseek)) {
    const thinking = await startServer(['--max-tokens', '512'], { chatTemplate: deepseek });
    servers.push(thinking.url);
    try {
      await check('a thinking template: the reasoning streams into a box, collapsed when done',
        async () => {
          await page.goto(thinking.url);
          await page.waitForFunction(() => document.getElementById('model').textContent.length > 0);
          await page.fill('#max-tokens', '24');
          await page.fill('#temperature', '0');
          await page.click('#new');
          await page.fill('#input', 'Think about a cat.');
          await page.click('#send');
          await page.waitForSelector('.msg.assistant.done', { timeout: 30000 });
          const box = page.locator('.msg.assistant.done details.reasoning');
          assert.equal(await box.count(), 1);
          assert.equal(await box.evaluate((d) => d.open), false);
          assert.ok((await box.locator('.thinking').textContent()).length > 0);
          assert.equal(await page.locator('.msg.assistant.done .body').textContent(), '');
          // The next turn sends the reasoning back (the template drops it): no error.
          await page.fill('#input', 'And then?');
          await page.click('#send');
          await page.waitForFunction(() => document.querySelectorAll('.msg.assistant.done').length > 1,
            null, { timeout: 30000 });
          assert.equal(await page.locator('.msg.assistant.error').count(), 0);
        });
    } finally {
      await stopServer(thinking);
    }
  }

  // A hybrid model (the qwen35 fixture: three Gated DeltaNet layers before each attention
  // layer, twice): its recurrent layers shown as what they are, a fixed-size state each.
  const qwen35 = fileURLToPath(new URL('../../data/arch/qwen35-f32.gguf', import.meta.url));
  const hybrid = await startServer(['--max-tokens', '64'], { modelPath: qwen35 });
  servers.push(hybrid.url);
  try {
    await check('a hybrid model: recurrent layers shown as fixed-size states',
      async () => {
        await page.goto(hybrid.url);
        await page.waitForFunction(() => document.getElementById('model').textContent.length > 0);
        await page.selectOption('#policy', 'tova');
        await page.fill('#budget', '8');
        await page.fill('#max-tokens', '8');
        await page.fill('#temperature', '0');
        await page.click('#new');
        const a = await ask('Hello there, how are you today? Tell me about the sea.');
        assert.ok(!a.error, a.meta);
        await page.waitForFunction(() => document.querySelectorAll('#layers .layer').length === 8);
        const kinds = await page.$$eval('#layers .layer',
          (ls) => ls.map((l) => l.dataset.kind ?? 'bounded'));
        const r = 'recurrent';
        assert.deepEqual(kinds, [r, r, r, 'bounded', r, r, r, 'bounded']);
        // (128 conv channels x 3 taps + 4 heads x 16 x 16) floats per layer: 5.5 KiB.
        const nums = await page.$$eval('#layers .layer[data-kind="recurrent"] .nums',
          (ns) => ns.map((n) => n.textContent));
        assert.deepEqual(nums, Array(6).fill('recurrent: 5.5 KiB fixed'));
        assert.equal(await page.textContent('[data-field="recurrent"]'),
          '6 layers, 33.0 KiB fixed');
        assert.match(await page.textContent('[data-field="bounded K/V"]'), /^2 layers, at most 8: /);
      });
  } finally {
    await stopServer(hybrid);
  }

  // Gemma 4's E variant (the gemma4e fixture: window and global layers, the last three reading
  // an earlier layer's K/V): its shared layers shown as what they are, holding nothing.
  const gemma4e = fileURLToPath(new URL('../../data/arch/gemma4e-f32.gguf', import.meta.url));
  const e = await startServer(['--max-tokens', '64'], { modelPath: gemma4e });
  servers.push(e.url);
  try {
    await check("Gemma 4 E: shared-K/V layers shown as reading an earlier layer's K/V",
      async () => {
        await page.goto(e.url);
        await page.waitForFunction(() => document.getElementById('model').textContent.length > 0);
        await page.selectOption('#policy', 'tova');
        await page.fill('#budget', '8');
        await page.fill('#max-tokens', '8');
        await page.fill('#temperature', '0');
        await page.click('#new');
        const a = await ask('Hello there, how are you today? Tell me about the sea.');
        assert.ok(!a.error, a.meta);
        await page.waitForFunction(() => document.querySelectorAll('#layers .layer').length === 9);
        const kinds = await page.$$eval('#layers .layer',
          (ls) => ls.map((l) => l.dataset.kind ?? 'bounded'));
        const [w, b, sh] = ['window', 'bounded', 'shared'];
        assert.deepEqual(kinds, [w, w, b, w, w, b, sh, sh, sh]);
        const nums = await page.$$eval('#layers .layer[data-kind="shared"] .nums',
          (ns) => ns.map((n) => n.textContent));
        assert.deepEqual(nums, Array(3).fill("shared: reads an earlier layer's K/V"));
        assert.equal(await page.textContent('[data-field="shared K/V"]'),
          "3 layers, reading earlier layers' K/V: none of their own");
        assert.match(await page.textContent('[data-field="bounded K/V"]'), /^2 layers, at most 8: /);
        assert.match(await page.textContent('[data-field="window K/V"]'), /^4 layers, at most 16: /);
      });
  } finally {
    await stopServer(e);
  }

  // TOVA_SCREENSHOT=FILE.png: what the page looks like now (for the docs).
  if (process.env.TOVA_SCREENSHOT) {
    await page.setViewportSize({ width: 1400, height: 800 });
    await page.screenshot({ path: process.env.TOVA_SCREENSHOT });
  }
  await check('no request left the server, no console error', async () => {
    assert.deepEqual(elsewhere, []);
    assert.deepEqual(consoleErrors, []);
  });
} finally {
  if (context) await context.close();
  rmSync(profile, { recursive: true, force: true });
  await stopServer(server);
}
finish('browser tests');
