// tova's chat page: conversations with their own policy and budget, streamed answers, and a
// live view of the bounded state (GET /v1/sessions/ID: states held and evicted per layer, K/V
// bytes, which earlier tokens each layer still holds). Plain browser JavaScript, no build step,
// nothing fetched from elsewhere.
'use strict';

const $ = (id) => document.getElementById(id);
const state = { info: null, conversations: [], current: null, busy: null };

function apiKey() { return localStorage.getItem('tova-api-key') || ''; }

function headers() {
  const h = { 'Content-Type': 'application/json' };
  if (apiKey()) h.Authorization = `Bearer ${apiKey()}`;
  return h;
}

function setStatus(text, error = false) {
  $('status').textContent = text;
  $('status').classList.toggle('error', error);
}

function formatBytes(b) {
  if (b >= 1 << 30) return `${(b / (1 << 30)).toFixed(2)} GiB`;
  if (b >= 1 << 20) return `${(b / (1 << 20)).toFixed(2)} MiB`;
  if (b >= 1 << 10) return `${(b / (1 << 10)).toFixed(1)} KiB`;
  return `${b} B`;
}

async function api(path, options = {}) {
  const r = await fetch(path, { ...options, headers: { ...headers(), ...(options.headers || {}) } });
  if (r.status === 401) {
    $('key-box').hidden = false;
    setStatus('this server needs an API key (left)', true);
  }
  return r;
}

async function errorText(r) {
  try { return (await r.json()).error.message; } catch { return `HTTP ${r.status}`; }
}

async function loadInfo() {
  const r = await api('/v1/models');
  if (!r.ok) return setStatus(await errorText(r), true);
  const model = (await r.json()).data[0];
  state.info = model.tova;
  $('model').textContent = model.id;
  const select = $('policy');
  select.textContent = '';
  for (const p of state.info.policies) {
    const o = document.createElement('option');
    o.value = p.name;
    o.textContent = p.name;
    o.title = p.help;
    select.append(o);
  }
  select.value = state.info.policy.replace(/:.*/, '');
  if (state.info.budget) $('budget').value = state.info.budget;
  $('positions').value = state.info.positions;
  onPolicyChange();
  setStatus(`${model.tova.n_layer} layers, ${model.tova.n_head_kv} KV heads each`);
}

function policyInfo(name) { return state.info.policies.find((p) => p.name === name); }

function onPolicyChange() {
  const p = policyInfo($('policy').value);
  $('budget-label').hidden = !p.bounded;
  $('arg-label').hidden = !p.arg;
}

function newConversation(ev) {
  ev.preventDefault();
  const p = policyInfo($('policy').value);
  const conv = {
    policy: p.arg ? `${p.name}:${$('policy-arg').value}` : p.name,
    budget: p.bounded ? Number($('budget').value) : null,
    positions: $('positions').value,
    maxTokens: Number($('max-tokens').value),
    temperature: Number($('temperature').value),
    messages: [],
    lastId: null,
    n: state.conversations.length + 1,
  };
  const system = $('system').value.trim();
  if (system) conv.messages.push({ role: 'system', content: system });
  state.conversations.push(conv);
  select(conv);
}

function label(conv) {
  return `${conv.policy}${conv.budget ? ` k=${conv.budget}` : ''}, ${conv.positions}`;
}

function select(conv) {
  state.current = conv;
  const list = $('conversations');
  list.textContent = '';
  for (const c of state.conversations) {
    const li = document.createElement('li');
    li.textContent = `Conversation ${c.n}`;
    const small = document.createElement('small');
    small.textContent = label(c);
    li.append(small);
    li.classList.toggle('active', c === conv);
    li.addEventListener('click', () => { if (!state.busy) select(c); });
    list.append(li);
  }
  $('conv-head').textContent = `Conversation ${conv.n}: ${label(conv)}, at most ${conv.maxTokens} ` +
    `tokens per answer, temperature ${conv.temperature}`;
  const box = $('messages');
  box.textContent = '';
  for (const m of conv.messages) {
    const div = addMessage(m.role, shownContent(m.content), m.meta);
    if (m.reasoning) reasoningBox(div, false).querySelector('.thinking').textContent = m.reasoning;
  }
  $('input').disabled = false;
  $('send').disabled = false;
  $('attach').disabled = false;
  $('input').focus();
  clearState();
  if (conv.lastId) refreshState(conv.lastId);
}

// A message's text as the page shows it: an image part is "[image NAME]".
function shownContent(content) {
  if (typeof content === 'string') return content;
  return content.map((p) => (p.type === 'text' ? p.text : `[image ${p.name || ''}]`)).join('\n');
}

// Images attached to the next message (the Image button): data: URLs, sent as image_url parts.
const attached = [];

function showAttached() {
  $('attached').textContent = attached.length
    ? `${attached.map((a) => a.name).join(', ')} attached to the next message` : '';
}

function attachImage() {
  const file = $('image-file').files[0];
  $('image-file').value = '';
  if (!file) return;
  const reader = new FileReader();
  reader.onload = () => {
    attached.push({ name: file.name, url: reader.result });
    showAttached();
  };
  reader.readAsDataURL(file);
}

function addMessage(role, text, meta) {
  const div = document.createElement('div');
  div.className = `msg ${role}`;
  const body = document.createElement('span');
  body.className = 'body';
  body.textContent = text;
  div.append(body);
  if (meta) {
    const m = document.createElement('span');
    m.className = 'meta';
    m.textContent = meta;
    div.append(m);
  }
  $('messages').append(div);
  div.scrollIntoView({ block: 'end' });
  return div;
}

// A thinking model's reasoning (reasoning_content): a collapsed <details> above the answer's
// text, open while the reasoning streams in, closed once the answer begins.
function reasoningBox(div, open) {
  let box = div.querySelector('details.reasoning');
  if (box) return box;
  box = document.createElement('details');
  box.className = 'reasoning';
  box.open = open;
  const summary = document.createElement('summary');
  summary.textContent = 'Reasoning';
  const text = document.createElement('div');
  text.className = 'thinking';
  box.append(summary, text);
  div.prepend(box);
  return box;
}

// Server-sent events: `data: JSON` lines, `data: [DONE]` at the end.
async function* events(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let at;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, at);
      buf = buf.slice(at + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        if (data === '[DONE]') return;
        yield JSON.parse(data);
      }
    }
  }
}

async function send(ev) {
  ev.preventDefault();
  const conv = state.current;
  const text = $('input').value.trim();
  if (!conv || !text || state.busy) return;
  $('input').value = '';
  // Images first, then the text (the parts a server with --mmproj takes; without, its 400
  // names --mmproj and shows as the answer's error).
  const content = attached.length === 0 ? text : [
    ...attached.map((a) => ({ type: 'image_url', image_url: { url: a.url }, name: a.name })),
    { type: 'text', text }];
  attached.length = 0;
  showAttached();
  conv.messages.push({ role: 'user', content });
  addMessage('user', shownContent(content));
  const div = addMessage('assistant', '');
  div.classList.add('streaming');
  const body = div.querySelector('.body');
  const ctrl = new AbortController();
  state.busy = ctrl;
  $('send').disabled = true;
  $('stop').hidden = false;
  let poll = null;
  let answer = '';
  let reasoning = '';
  let meta = '';
  try {
    const request = {
      model: 'tova',
      // An answer's reasoning goes back with it: the template keeps what it wants of it.
      messages: conv.messages.map(({ role, content, reasoning }) => {
        // The page's own name of an image part stays on the page.
        const sent = typeof content === 'string' ? content
          : content.map((p) => (p.type === 'text' ? p : { type: p.type, image_url: p.image_url }));
        return reasoning ? { role, content: sent, reasoning_content: reasoning }
          : { role, content: sent };
      }),
      stream: true, max_tokens: conv.maxTokens,
      temperature: conv.temperature, kv_policy: conv.policy, kv_positions: conv.positions,
      stream_options: { include_usage: true },
    };
    if (conv.budget) request.kv_budget = conv.budget;
    const r = await api('/v1/chat/completions', { method: 'POST', body: JSON.stringify(request),
      signal: ctrl.signal });
    if (!r.ok) throw new Error(await errorText(r));
    const id = r.headers.get('X-Request-Id');
    conv.lastId = id;
    poll = setInterval(() => refreshState(id), 400);
    let usage = null;
    let kv = null;
    let timings = null;
    for await (const chunk of events(r)) {
      if (chunk.error) throw new Error(chunk.error.message);
      if (chunk.usage) usage = chunk.usage;
      if (chunk.timings) timings = chunk.timings;
      if (chunk.tova) kv = chunk.tova;
      for (const c of chunk.choices) {
        if (c.delta && c.delta.reasoning_content) {
          reasoning += c.delta.reasoning_content;
          const box = reasoningBox(div, true);
          box.querySelector('.thinking').textContent = reasoning;
          box.querySelector('summary').textContent = 'Reasoning…';
        }
        if (c.delta && c.delta.content) {
          if (reasoning && !answer) {
            const box = reasoningBox(div, false);
            box.open = false;
            box.querySelector('summary').textContent = 'Reasoning';
          }
          answer += c.delta.content;
          body.textContent = answer;
        }
      }
    }
    if (usage && kv) {
      meta = `${usage.completion_tokens} tokens, prompt ${usage.prompt_tokens} ` +
        `(${usage.prompt_tokens_details.cached_tokens} continued from the held state), ` +
        `${kv.states_held} states held per layer, ${formatBytes(kv.kv_bytes)} of K/V`;
      if (timings && timings.draft_n) {
        meta += `, ${timings.draft_n_accepted} of ${timings.draft_n} drafted tokens accepted ` +
          `(${Math.round(100 * timings.draft_n_accepted / timings.draft_n)} %)`;
      }
    }
    setStatus('');
  } catch (e) {
    if (e.name === 'AbortError') {
      meta = 'stopped';
    } else {
      div.classList.add('error');
      meta = e.message;
      setStatus(e.message, true);
    }
  } finally {
    clearInterval(poll);
    state.busy = null;
    $('send').disabled = false;
    $('stop').hidden = true;
    div.classList.remove('streaming');
  }
  if (reasoning) {
    const box = reasoningBox(div, false);
    box.open = false;
    box.querySelector('summary').textContent = 'Reasoning';
  }
  conv.messages.push({ role: 'assistant', content: answer, reasoning, meta });
  const m = document.createElement('span');
  m.className = 'meta';
  m.textContent = meta;
  div.append(m);
  div.classList.add('done');
  if (conv.lastId) await refreshState(conv.lastId);
}

function clearState() {
  $('state-summary').textContent = '';
  $('layers').textContent = '';
  $('tokens').textContent = '';
}

let refreshing = false;
async function refreshState(id) {
  if (refreshing) return;
  refreshing = true;
  try {
    const r = await api(`/v1/sessions/${encodeURIComponent(id)}`);
    if (r.ok) renderState(await r.json());
  } finally {
    refreshing = false;
  }
}

function renderState(s) {
  const t = s.tova;
  const summary = $('state-summary');
  summary.textContent = '';
  const rows = [
    ['policy', `${t.policy}${t.budget ? ` k=${t.budget}` : ''} (${t.prefill}, ${s.positions})`],
    ['K/V memory', `${formatBytes(t.kv_bytes)} (${s.kv_type})`],
    ['tokens seen', String(t.tokens_seen)],
    ['states held', `${t.states_held} per layer`],
    ['evicted', `${t.tokens_evicted} per layer`],
    ['status', s.generating ? 'generating' : 'held for the next turn'],
  ];
  // Memory by kind of layer state: bounded K/V (the policy's budget), window K/V (the model's
  // sliding window), recurrent states (a hybrid model's Gated DeltaNet or short-convolution
  // layers: fixed size), shared K/V (Gemma 4 E2B/E4B's last layers: they read an earlier
  // layer's K/V, hold none).
  const recurrent = (t.memory_by_kind || []).find((k) => k.kind === 'recurrent');
  for (const k of t.memory_by_kind || []) {
    if (k.kind === 'recurrent') {
      rows.push(['recurrent', `${k.layers} layers, ${formatBytes(k.bytes)} fixed`]);
      continue;
    }
    if (k.kind === 'shared') {
      rows.push(['shared K/V', `${k.layers} layers, reading earlier layers' K/V: none of their own`]);
      continue;
    }
    const limit = k.limit === null ? 'unbounded' : `at most ${k.limit}`;
    rows.push([`${k.kind} K/V`, `${k.layers} layers, ${limit}: ${k.max_held} held, ` +
      `${k.rows} rows, ${formatBytes(k.bytes)}`]);
  }
  for (const [k, v] of rows) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = v;
    dd.dataset.field = k;
    summary.append(dt, dd);
  }
  const layers = $('layers');
  layers.textContent = '';
  const scale = Math.max(1, ...t.states_held_per_layer);
  t.states_held_per_layer.forEach((held, i) => {
    const row = document.createElement('div');
    row.className = 'layer';
    row.dataset.held = held;
    row.dataset.evicted = t.tokens_evicted_per_layer[i];
    const name = document.createElement('span');
    name.textContent = `L${i}`;
    if (t.layer_kinds && t.layer_kinds[i] === 'window') {
      name.textContent += 'w';
      name.title = 'a sliding-window layer: never more than its window';
      row.dataset.kind = 'window';
    }
    const isRecurrent = t.layer_kinds && t.layer_kinds[i] === 'recurrent';
    if (isRecurrent) {
      name.textContent += 'r';
      name.title = 'a recurrent layer (Gated DeltaNet, short convolution): a fixed-size state, no K/V';
      row.dataset.kind = 'recurrent';
    }
    const isShared = t.layer_kinds && t.layer_kinds[i] === 'shared';
    if (isShared) {
      name.textContent += 's';
      name.title = "a shared-K/V layer: it reads an earlier layer's K/V and holds none";
      row.dataset.kind = 'shared';
    }
    const bar = document.createElement('div');
    bar.className = 'bar';
    const fill = document.createElement('div');
    fill.className = 'held';
    fill.style.width = `${(100 * held) / scale}%`;
    bar.append(fill);
    const nums = document.createElement('span');
    nums.className = 'nums';
    nums.textContent = isRecurrent && recurrent
      ? `recurrent: ${formatBytes(recurrent.bytes / recurrent.layers)} fixed`
      : isShared ? "shared: reads an earlier layer's K/V"
        : `${held} held, ${t.tokens_evicted_per_layer[i]} out`;
    row.append(name, bar, nums);
    layers.append(row);
  });
  const tokens = $('tokens');
  tokens.textContent = '';
  const pairs = s.n_layer * s.n_head_kv;
  s.pieces.forEach((piece, p) => {
    const span = document.createElement('span');
    const held = s.held_by[p];
    span.textContent = piece;
    span.dataset.held = held;
    span.title = `position ${p}: held by ${held} of ${pairs} (layer, KV head) pairs`;
    if (held === 0) {
      span.className = 'gone';
    } else {
      span.style.backgroundColor = `rgba(var(--held), ${(0.08 + 0.5 * held / pairs).toFixed(3)})`;
    }
    tokens.append(span);
  });
}

$('policy').addEventListener('change', onPolicyChange);
$('new-form').addEventListener('submit', newConversation);
$('composer').addEventListener('submit', send);
$('attach').addEventListener('click', () => $('image-file').click());
$('image-file').addEventListener('change', attachImage);
$('stop').addEventListener('click', () => state.busy && state.busy.abort());
$('input').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey) send(e);
});
$('api-key').addEventListener('change', () => {
  localStorage.setItem('tova-api-key', $('api-key').value);
  loadInfo();
});
loadInfo().catch((e) => setStatus(e.message, true));
