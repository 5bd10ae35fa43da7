// The agentvisor console page. No build step: plain DOM code, fed by one server-sent event
// stream (/api/stream) — a `snapshot` on every change, `records` as agent events are appended.
'use strict';

const token = new URLSearchParams(location.search).get('token');
const withToken = (url) => token ? `${url}${url.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}` : url;
const TERMINAL = new Set(['exited', 'failed', 'killed']);
const page = { snapshot: null, control: false, selected: null, records: [], lines: new Set(), view: 'tree' };
// Stays the same for the life of the page: a test can tell an update from a reload.
window.__consoleLoadId = Math.random().toString(36).slice(2);
window.__consoleFrames = 0;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const short = (pid) => (pid ? String(pid).slice(-8) : '-');
const dollars = (micros) => (micros === undefined || micros === null ? '-' : `$${(micros / 1e6).toFixed(4)}`);
function usageText(usage) {
  if (!usage) return '';
  const tokens = (usage.input_tokens || 0) + (usage.output_tokens || 0);
  return `${tokens} tokens, ${dollars(usage.cost_micros)}`;
}
function sumCost(byProfile) {
  let micros = 0; let known = false;
  for (const usage of Object.values(byProfile || {})) {
    if (usage && usage.cost_micros !== undefined && usage.cost_micros !== null) { micros += usage.cost_micros; known = true; }
  }
  return known ? micros : null;
}
function budgetText(budget) {
  if (!budget) return '';
  const limit = budget.limit || {}; const spent = budget.spent || {};
  const parts = [];
  for (const [key, cap] of Object.entries(limit)) {
    if (cap === null || cap === undefined) continue;
    const used = spent[key] || 0;
    parts.push(key === 'cost_micros' ? `cost ${dollars(used)}/${dollars(cap)}` : `${key} ${used}/${cap}`);
  }
  return parts.length ? parts.join(' · ') : 'unlimited';
}
function senderText(sender) {
  if (!sender) return '-';
  if (typeof sender === 'string') return sender;
  const [kind, value] = Object.entries(sender)[0] || ['?', ''];
  return typeof value === 'string' && value.length > 8 ? short(value) : `${kind}${value ? ' ' + value : ''}`;
}

// An agent's goal is its launch JSON; a person reads its prompt.
function goalText(goal) {
  try {
    const parsed = JSON.parse(goal);
    if (parsed && typeof parsed === 'object' && typeof parsed.prompt === 'string') return parsed.prompt;
  } catch (e) { /* not JSON: shown as it is */ }
  return goal;
}

function notice(text, bad) {
  const box = document.getElementById('notice');
  box.hidden = false;
  box.className = bad ? 'bad' : 'good';
  box.textContent = text;
}

// ---- the tree ---------------------------------------------------------------------------

function seatsByPid() {
  const seats = new Map();
  for (const rig of (page.snapshot && page.snapshot.rigs) || []) {
    for (const seat of rig.seats) if (seat.pid) seats.set(seat.pid, seat);
  }
  return seats;
}

// The seat whose session a forked seat started from: named `seat:MEMBER`, or by its token.
function sourceSeat(seat) {
  if (!seat || !seat.source) return null;
  for (const rig of page.snapshot.rigs || []) {
    if (rig.rig.id !== seat.rig) continue;
    const found = rig.seats.find((s) => `seat:${s.member}` === seat.source || (s.token && s.token === seat.source));
    if (found) return found;
  }
  return null;
}

function incarnationsOf(p) {
  const costs = new Map(((p.agent && p.agent.incarnations) || []).map((i) => [i.agent_id, i]));
  const seen = (p.history && p.history.incarnations) || [];
  if (seen.length) return seen.map((i) => ({ ...i, usage: (costs.get(i.agent_id) || {}).usage }));
  return [...costs.values()].map((i) => ({ agent_id: i.agent_id, profile: i.profile, via: '', turns: i.turns, usage: i.usage }));
}

function machineOf(p) {
  const identity = (p.agent && p.agent.identity) || {};
  const states = (p.history && p.history.states) || [];
  const last = states[states.length - 1];
  const name = (identity.machine && identity.machine.machine) || (last && last.machine);
  if (!name) return null;
  const current = (identity.machine && identity.machine.state) || (last && last.state);
  const declared = (page.snapshot.machines || {})[name];
  const visited = new Set(states.filter((s) => s.machine === name).map((s) => s.state));
  const ids = declared ? declared.states.map((s) => s.id) : [...visited];
  return el('div', { class: 'machine', 'data-machine': name },
    el('span', { class: 'machine-name', text: `machine ${name}` }),
    ids.map((id, i) => [
      i ? el('span', { class: 'arrow', text: '→' }) : null,
      el('span', {
        class: `fsm-state${id === current ? ' current' : ''}${visited.has(id) ? ' visited' : ''}`,
        'data-state': id,
        title: declared ? `profile ${declared.states[i].profile}` : '',
        text: id,
      }),
    ]));
}

function controls(p) {
  if (!page.control || TERMINAL.has(p.status)) return null;
  const actions = ['pause', 'resume', 'cancel', 'terminate', p.host_gate ? 'ungate' : 'gate'];
  return el('div', { class: 'controls' }, actions.map((action) =>
    el('button', { class: 'act', 'data-action': action, 'data-pid': p.pid, onclick: () => act(p.pid, action), text: action })));
}

async function act(pid, action) {
  let reason = null;
  if (action === 'gate') {
    reason = prompt('Why does the host hold it?');
    if (!reason) return;
  }
  const response = await fetch(withToken(`/api/control/${pid}`), {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ action, reason }),
  });
  const answer = await response.json();
  if (response.ok) notice(answer.stdout || `${action} sent`, false);
  else {
    const error = answer.error || {};
    notice(error.stderr || error.message || `${action} refused`, true);
  }
}

function box(p, seats) {
  const agent = p.agent; const history = p.history || {};
  const seat = seats.get(p.pid);
  const forkedFrom = history.forked_from;
  const source = sourceSeat(seat);
  const classes = ['proc', `status-${p.status}`];
  if (p.stale) classes.push('stale');
  if (forkedFrom || (seat && seat.source)) classes.push('fork');
  if (agent) classes.push('agent');
  const profile = agent && agent.identity ? agent.identity.profile : null;
  const incarnations = agent ? incarnationsOf(p) : [];
  const subtree = agent ? sumCost(agent.subtree_by_profile) : null;
  return el('div', { class: classes.join(' '), 'data-pid': p.pid, 'data-short': p.short, 'data-status': p.status, id: `proc-${p.pid}` },
    el('div', { class: 'proc-head' },
      el('span', { class: 'status', text: p.stale ? `${p.status} (stale)` : p.status }),
      el('span', { class: 'short', text: p.short }),
      el('span', { class: 'image', text: p.image }),
      profile ? el('span', { class: 'profile', text: profile }) : null,
      seat ? el('span', { class: 'seat-tag', text: `seat ${seat.member}` }) : null),
    el('div', { class: 'goal', title: p.goal, text: goalText(p.goal) }),
    el('div', { class: 'meta', text: [
      `depth ${p.depth}`, budgetText(p.budget), `unread ${p.unread}`, `wait ${p.wait}`,
      p.host_gate ? `gate: ${p.host_gate}` : null,
    ].filter(Boolean).join(' · ') }),
    forkedFrom ? el('div', { class: 'forked-from' }, 'copy of ',
      el('a', { href: `#proc-${forkedFrom.pid}`, 'data-goto': forkedFrom.pid, text: short(forkedFrom.pid) }),
      forkedFrom.turn !== null && forkedFrom.turn !== undefined ? ` at turn ${forkedFrom.turn}` : '') : null,
    seat && seat.source ? el('div', { class: 'seat-source' }, `forked from source session ${seat.source}`,
      source ? [' — a copy of seat ', el('a', { href: `#proc-${source.pid}`, 'data-goto': source.pid, text: source.member }),
        source.token ? ` (session ${source.token})` : ''] : '') : null,
    incarnations.length ? el('ol', { class: 'incarnations' }, incarnations.map((i) =>
      el('li', { class: 'incarnation', 'data-agent-id': i.agent_id, 'data-via': i.via || '' },
        el('span', { class: 'inc-profile', text: i.profile }),
        i.via ? el('span', { class: `via via-${i.via}`, text: i.via === 'exec' ? `exec at turn ${i.turn}` : i.via }) : null,
        el('span', { class: 'inc-meta', text: `${i.turns || 0} turns · ${usageText(i.usage)}` }),
        Array.isArray(i.modules) && i.modules.length ? el('ul', { class: 'modules' }, i.modules.map((m) =>
          el('li', { class: `module module-${m.action}`, text: `${m.module}: ${m.action}` }))) : null))) : null,
    agent ? machineOf(p) : null,
    (history.forks || []).length ? el('div', { class: 'forks' }, 'forked ', history.forks.map((f, i) => [
      i ? ', ' : '', el('a', { href: `#proc-${f.pid}`, 'data-goto': f.pid, text: short(f.pid) }),
      f.turn !== null && f.turn !== undefined ? ` at turn ${f.turn}` : '']))
      : null,
    agent ? el('div', { class: 'cost', text: `subtree cost ${dollars(subtree)}` }) : null,
    el('div', { class: 'box-actions' },
      agent ? el('button', { class: 'open-conversation', onclick: () => openConversation(p.pid), text: 'conversation' }) : null,
      controls(p)));
}

function renderTree() {
  const root = document.getElementById('tree');
  const processes = page.snapshot.processes || [];
  if (!processes.length) {
    root.replaceChildren(el('p', { class: 'empty', text: page.snapshot.ready ? 'No processes.' : 'No processes yet: the state directory holds no store.' }));
    return;
  }
  const children = new Map();
  for (const p of processes) {
    const key = p.parent || '';
    if (!children.has(key)) children.set(key, []);
    children.get(key).push(p);
  }
  const seats = seatsByPid();
  const known = new Set(processes.map((p) => p.pid));
  const branch = (list) => el('ul', { class: 'tree' }, list.map((p) =>
    el('li', {}, box(p, seats), children.has(p.pid) ? branch(children.get(p.pid)) : null)));
  const roots = processes.filter((p) => !p.parent || !known.has(p.parent));
  root.replaceChildren(branch(roots));
}

// ---- the conversation -------------------------------------------------------------------

async function openConversation(pid) {
  page.selected = pid;
  page.records = [];
  page.lines = new Set();
  show('conversation');
  await loadConversation();
}

async function loadConversation() {
  if (!page.selected) return;
  const response = await fetch(withToken(`/api/conversation/${page.selected}`));
  const records = await response.json();
  page.records = []; page.lines = new Set();
  addRecords(records);
}

function addRecords(batch) {
  let added = false;
  for (const { line, record } of batch) {
    if (record.pid !== page.selected || page.lines.has(line)) continue;
    page.lines.add(line);
    page.records.push({ line, record });
    added = true;
  }
  if (added || !page.records.length) renderConversation();
}

function callLine(call) {
  const name = call.tool || call.name;
  if (call.arguments === undefined && call.result === undefined && call.error === undefined) {
    return el('li', { class: 'call' }, el('code', { text: name }));
  }
  const args = call.arguments === undefined ? '' : JSON.stringify(call.arguments);
  const outcome = call.error !== undefined && call.error !== null
    ? el('span', { class: 'call-error', text: ` ⇒ refused ${call.error.code || ''}: ${call.error.message || JSON.stringify(call.error)}` })
    : call.result !== undefined ? el('span', { class: 'call-result', text: ` ⇒ ${JSON.stringify(call.result)}` }) : null;
  return el('li', { class: 'call' }, el('code', { text: `${name}(${args})` }), outcome);
}

function eventNode(record) {
  const r = record;
  const line = (cls, ...parts) => el('div', { class: `event ${cls}`, 'data-type': r.type }, ...parts);
  switch (r.type) {
    case 'agent_spawned':
      return line('spawned',
        el('div', { class: 'mark', text: `started as ${r.profile} (${r.via}${r.parent_agent_id ? ` from ${r.parent_agent_id}` : ''}; ${r.inherited_messages || 0} messages inherited)` }),
        (r.opening || []).map((m) => el('div', { class: `msg role-${m.role}` }, el('b', { text: `${m.role}: ` }), m.text)));
    case 'turn_completed': {
      const calls = Array.isArray(r.calls) ? r.calls : (r.tool_calls || []).map((name) => ({ tool: name }));
      return line('turn', el('div', { class: 'turn-head', text: `turn ${r.turn}${r.compacted ? ' (after compaction)' : ''} · ${usageText(r.usage)}` }),
        r.text ? el('div', { class: 'msg role-assistant' }, el('b', { text: 'assistant: ' }), r.text) : null,
        calls.length ? el('ul', { class: 'calls' }, calls.map(callLine)) : null);
    }
    case 'message_sent':
      return line('sent', `→ message to ${short(r.to_pid)}: `, el('q', { text: r.text }));
    case 'message_received':
      return line('received', `← ${r.kind === 'interrupt' ? 'interrupt' : 'message'} from ${short(r.from_pid)}: `, el('q', { text: r.text }));
    case 'compacted':
      return line('compacted', `compacted before turn ${r.turn}: ${r.tokens_before} → ${r.tokens_after} tokens, ${r.cut} messages cut`);
    case 'agent_transition':
      return line(`transition transition-${r.kind}`,
        r.kind === 'exec' ? `exec → ${r.to_profile} at turn ${r.turn}` : r.kind === 'fork' ? `fork → copy ${r.to_agent_id} at turn ${r.turn}` : `machine move → ${r.to_profile} at turn ${r.turn}`,
        (r.modules || []).length ? ` (modules: ${r.modules.map((m) => `${m.module} ${m.action}`).join(', ')})` : '');
    case 'fsm_state':
      return line('fsm', `machine ${r.machine}: ${r.from ? `${r.from} → ` : 'entered '}${r.state}`);
    case 'tool_refused':
      return line('refused', `refused ${r.tool}: ${r.code} — ${r.message}`);
    case 'model_retried':
      return line('retried', `model request ${r.attempt} failed (${r.code}); retrying in ${r.delay_ms} ms`);
    case 'agent_finished':
      return line('finished', `finished: ${JSON.stringify(r.outcome)}`, r.result !== null && r.result !== undefined ? el('pre', { text: JSON.stringify(r.result, null, 2) }) : null);
    default:
      return line('other', `${r.type}: `, el('code', { text: JSON.stringify(r) }));
  }
}

function renderConversation() {
  const head = document.getElementById('conversation-head');
  const body = document.getElementById('conversation');
  const p = ((page.snapshot && page.snapshot.processes) || []).find((q) => q.pid === page.selected);
  if (!page.selected) return;
  const agent = p && p.agent;
  head.replaceChildren(el('h2', { text: `Conversation of ${short(page.selected)}${agent && agent.identity ? ` (${agent.identity.profile})` : ''}` }),
    agent ? el('p', { class: 'cost', text: `subtree cost ${dollars(sumCost(agent.subtree_by_profile))}` }) : null);
  const streams = new Map();
  for (const { record } of page.records) {
    if (!streams.has(record.agent_id)) streams.set(record.agent_id, []);
    streams.get(record.agent_id).push(record);
  }
  const costs = new Map(((agent && agent.incarnations) || []).map((i) => [i.agent_id, i.usage]));
  body.replaceChildren(...[...streams.entries()].map(([agentId, records]) => {
    const first = records[0];
    return el('section', { class: 'stream', 'data-agent-id': agentId },
      el('h3', { text: `${agentId} · ${first.profile || ''} · ${usageText(costs.get(agentId))}` }),
      records.map(eventNode));
  }));
  if (!streams.size) body.replaceChildren(el('p', { class: 'empty', text: 'No agent events for this process.' }));
}

// ---- messages and seats ---------------------------------------------------------------

function renderMessages() {
  const messages = page.snapshot.messages || [];
  const root = document.getElementById('messages');
  if (!messages.length) { root.replaceChildren(el('p', { class: 'empty', text: 'No messages.' })); return; }
  root.replaceChildren(el('table', {},
    el('thead', {}, el('tr', {}, ['seq', 'from', 'to', 'kind', 'channel', 'correlation', 'reply to', 'read', 'body'].map((h) => el('th', { text: h })))),
    el('tbody', {}, messages.map((m) => el('tr', { class: `message ${m.acked ? 'acked' : 'unread'}`, 'data-message-id': m.message_id },
      [m.seq, senderText(m.sender), short(m.recipient), m.kind, m.channel || '-', m.correlation_id || '-', m.reply_to ? short(m.reply_to) : '-', m.acked ? 'acked' : 'unread', m.body]
        .map((v) => el('td', { text: String(v) })))))));
}

function renderSeats() {
  const rigs = page.snapshot.rigs || [];
  const root = document.getElementById('seats');
  if (!rigs.length) { root.replaceChildren(el('p', { class: 'empty', text: 'No rigs.' })); return; }
  root.replaceChildren(...rigs.map(({ rig, seats }) => el('section', { class: 'rig', 'data-rig': rig.id },
    el('h3', { text: `rig ${rig.id}` }),
    el('table', {},
      el('thead', {}, el('tr', {}, ['seat', 'runtime', 'status', 'own session', 'started from', 'process', 'error'].map((h) => el('th', { text: h })))),
      el('tbody', {}, seats.map((s) => el('tr', { class: `seat seat-${s.status}`, 'data-member': s.member },
        el('td', { text: s.member }), el('td', { text: s.runtime }), el('td', { text: s.status }),
        el('td', { class: 'token', text: s.token || '-' }),
        el('td', { class: 'source', text: s.source ? `forked from source session ${s.source}` : 'fresh' }),
        el('td', {}, s.pid ? el('a', { href: `#proc-${s.pid}`, 'data-goto': s.pid, text: short(s.pid) }) : '-'),
        el('td', { text: [s.failed_step, s.error, s.stderr].filter(Boolean).join(': ') || '-' }))))))));
}

// ---- wiring -------------------------------------------------------------------------------

function show(view) {
  page.view = view;
  for (const tab of document.querySelectorAll('.tab')) tab.classList.toggle('active', tab.dataset.view === view);
  for (const section of document.querySelectorAll('.view')) section.classList.toggle('active', section.id === `view-${view}`);
}

function render() {
  const s = page.snapshot;
  const owner = !s.ready ? 'no store yet' : s.owner_alive ? `a live runtime owns it (epoch ${s.epoch})` : `no runtime owns it (last epoch ${s.epoch})`;
  document.getElementById('state-line').textContent = `${s.state} — ${owner}${s.error ? ` — ${s.error}` : ''}`;
  renderTree();
  renderMessages();
  renderSeats();
  if (page.selected) renderConversation();
  window.__consoleFrames += 1;
}

document.addEventListener('click', (event) => {
  const target = event.target.closest('[data-goto]');
  if (!target) return;
  event.preventDefault();
  show('tree');
  const node = document.getElementById(`proc-${target.dataset.goto}`);
  if (node) { node.scrollIntoView({ block: 'center' }); node.classList.add('flash'); setTimeout(() => node.classList.remove('flash'), 1200); }
});
for (const tab of document.querySelectorAll('.tab')) tab.addEventListener('click', () => show(tab.dataset.view));

async function start() {
  const about = await (await fetch(withToken('/api/console'))).json();
  page.control = about.control;
  document.body.classList.toggle('with-control', page.control);
  const stream = new EventSource(withToken('/api/stream'));
  const live = document.getElementById('live');
  stream.onopen = () => { live.textContent = '● live'; live.className = 'live on'; };
  stream.onerror = () => { live.textContent = '○ reconnecting'; live.className = 'live off'; };
  stream.addEventListener('snapshot', (event) => { page.snapshot = JSON.parse(event.data); render(); });
  stream.addEventListener('records', (event) => { if (page.selected) addRecords(JSON.parse(event.data)); });
  stream.addEventListener('resync', () => loadConversation());
}
start();
