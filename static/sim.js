// sim.js runs the classroom: it starts simulator runs (one, or a herd run and
// a predecessor run side by side on the same scenario), follows each over its
// websocket, and sends the teacher's commands (play, step, scrub, act on a
// client) as plain HTTP POSTs. All the lock logic is the server's; this file
// only shows states and forwards intentions.

import { drawQueue, tick, animateNotify, animateNotifyParent, legend, modeLabel } from './queue.js';
import { QueueTable, describeNode } from './table.js';
import { closeSocket } from './live.js';

const API = '/api/v1/sim';
const $ = (id) => document.getElementById(id);
const ui = {
  scenario: $('scenario'), strategy: $('strategy'), clients: $('clients'), fencing: $('fencing'),
  restart: $('restart'), back: $('back'), play: $('play'), step: $('step'), speed: $('speed'),
  speedOut: $('speed-out'), addReader: $('add-reader'), addWriter: $('add-writer'), share: $('share'),
  scrub: $('scrub'), ticks: $('ticks'), stepInfo: $('step-info'), runs: $('runs'), error: $('sim-error'),
  shortcuts: $('shortcuts'), strategyFixed: $('strategy-fixed'), runList: $('run-list'), runCount: $('run-count'),
  runItems: $('run-items'),
};

let scenarios = [];
let panels = []; // one per run
let showTable = false;
// The run's interventions, in order: each a client action taken at a step
// (the step shown when it was taken). The URL carries them, so a shared link
// replays the same run: same scenario, clients, fencing and actions.
let acts = [];
let replaying = null; // {acts, step} from the URL, applied once the runs exist
let generation = 0; // bumps on restart, so late answers of old runs are dropped
// together is the browser's own playback of a comparison: it steps both runs
// at once, on one clock. Each run playing on its own timer drifts apart from
// the other, the herd's steps taking longer on ZooKeeper.
let together = null;
let showing = null; // show() while it moves the runs to their newest states
let inflight = 0; // API calls not answered yet

// ---- State shape --------------------------------------------------------
// runState is a run's State as simulator/run.go sends it, with what the
// page derives once: total, the steps played or planned, whichever is more,
// and the pseudocode's lines. Go sends a nil list as null.
function runState(s) {
  return {
    ...s, total: Math.max(s.steps, s.planned), lines: s.pseudocode.lines || [],
    events: s.events || [], violations: s.violations || [], clients: s.clients || [], stats: s.stats || {},
  };
}

// RunClock gives the queue, the table and the client pane their times from
// the run's clock at the shown step (State.clockMs; a client's joinedMs and
// sinceMs), never from this page's clock: a step reads the same live, after
// scrubbing, and opened from a shared link. It has Timing's interface
// (queue.js); the run's panel carries data-clock-at, which stops tick() at
// the step's clock.
export class RunClock {
  constructor() {
    this.at = 0;
    this.byNode = new Map();
  }

  observe(state) {
    this.at = state.clockMs || 0;
    this.byNode = new Map(state.clients.filter((c) => c.node).map((c) => [c.node, c]));
  }

  since(n) {
    const c = this.byNode.get(n.name);
    if (!c) return this.at;
    return n.holding ? c.sinceMs ?? this.at : c.joinedMs ?? this.at;
  }

  verb(n) {
    if (n.foreign) return 'age';
    return n.holding ? 'holds' : 'waits';
  }

}

// ---- HTTP ---------------------------------------------------------------
async function call(method, path, body) {
  inflight++;
  try {
    const res = await fetch(API + path, {
      method,
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = null;
    const text = await res.text();
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = { error: text };
      }
    }
    if (!res.ok) throw new Error((data && data.error) || `${res.status} ${res.statusText}`);
    return data;
  } finally {
    inflight--;
    // A run held back for this answer may show now, once the caller has
    // taken the answer (or not: a failed step leaves the runs apart).
    setTimeout(show, 0);
  }
}

function showError(err) {
  if (!err) {
    ui.error.hidden = true;
    ui.error.textContent = '';
    return;
  }
  ui.error.hidden = false;
  ui.error.textContent = String(err.message || err);
}

// ---- One run ------------------------------------------------------------
class Panel {
  constructor(strategy, compare) {
    this.strategy = strategy;
    this.state = null;
    this.prev = null;
    this.timing = new RunClock();
    this.selectedClient = '';
    this.selectedNode = '';
    this.queue = [];
    this.el = document.createElement('section');
    this.el.className = 'run card';
    this.el.dataset.strategy = strategy;
    this.el.setAttribute('aria-label', `run: ${strategy}`);
    const titles = {
      herd: 'herd: every waiter watches all children',
      children: 'children: every standby watches the lock\'s children',
    };
    const title = titles[strategy] || 'predecessor: each waiter watches one node';
    this.el.innerHTML = `
      <h2><span class="strategy"></span><span class="run-title dim"></span></h2>
      <div class="narration" aria-live="polite"></div>
      <div class="herd" aria-label="herd meter"></div>
      <div class="lane-scroll"><svg class="lane" role="group" aria-label="lock queue"></svg></div>
      <div class="clients" role="list" aria-label="clients"></div>
      <div class="client-pane details" aria-live="polite"></div>
      <details class="more pseudo-box" open><summary>recipe pseudocode</summary><ol class="pseudo"></ol></details>
      <details class="more"><summary>events</summary><ol class="events"></ol></details>
      <div class="run-table" ${showTable ? '' : 'hidden'}></div>`;
    this.el.querySelector('.strategy').textContent = strategy;
    this.el.querySelector('.run-title').textContent = title;
    this.narration = this.el.querySelector('.narration');
    this.herd = this.el.querySelector('.herd');
    this.svg = this.el.querySelector('svg.lane');
    this.clientsEl = this.el.querySelector('.clients');
    this.pane = this.el.querySelector('.client-pane');
    this.pseudo = this.el.querySelector('.pseudo');
    this.eventsEl = this.el.querySelector('.events');
    this.tableEl = this.el.querySelector('.run-table');
    this.table = new QueueTable(this.tableEl, { pageSize: 50, onSelect: (n) => this.selectNode(n) });
    this.compare = compare;
  }

  async start(scenario, clients, fencing, gen) {
    // A lease scenario has no strategy to choose ("children" is its own).
    const body = { scenario, fencing };
    if (this.strategy !== 'children') body.strategy = this.strategy;
    if (clients > 0) body.clients = clients;
    const raw = await call('POST', '/runs', body);
    if (gen !== generation) {
      call('DELETE', `/runs/${encodeURIComponent(raw.id)}`).catch(() => {});
      return;
    }
    this.id = raw.id;
    this.el.dataset.run = this.id;
    this.accept(raw);
    this.connect(gen);
  }

  connect(gen) {
    if (gen !== generation || !this.id) return;
    const u = new URL(`${API}/runs/${encodeURIComponent(this.id)}/ws`, location.href);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(u);
    this.ws = ws;
    this.el.dataset.socket = 'connecting';
    ws.onmessage = (ev) => {
      try {
        this.accept(JSON.parse(ev.data));
      } catch (err) {
        console.error('sim: bad message', err);
      }
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws || gen !== generation || this.closed) return;
      this.el.dataset.socket = 'closed';
      // A normal closure is the server saying the run ended: reconnecting
      // would only be refused (404).
      if (ev.code === 1000) {
        showError(`${this.strategy}: the run ended on the server; press restart for a new one`);
        return;
      }
      setTimeout(() => this.connect(gen), 1000);
    };
    ws.onopen = () => (this.el.dataset.socket = 'open');
  }

  // accept takes a State from the socket or from a command's answer.
  accept(raw) {
    if (!raw || typeof raw !== 'object' || raw.id === undefined) return;
    if (this.id && raw.id !== this.id) return;
    this.queue.push(runState(raw));
    show();
  }

  // latest is the newest state received, shown or not.
  latest() {
    return this.queue.length ? this.queue[this.queue.length - 1] : this.state;
  }

  // animate shows the notifications the new step delivered, on the old
  // drawing: a dot runs from the node whose deletion fired an exists watch to
  // the watcher, or drops from the parent bar for a children watch (the herd).
  async animate(before, after) {
    const pos = this.positions;
    if (!pos) return;
    const nodeOf = new Map(before.clients.map((c) => [c.name, c.node]));
    const ms = Math.max(150, Math.min(900, 650 / (after.speed || 1)));
    const jobs = [];
    for (const e of after.events) {
      if (e.step !== after.step || e.kind !== 'notify') continue;
      const to = pos.get(nodeOf.get(e.client));
      if (to === undefined) continue;
      if (e.watch === 'children') jobs.push(animateNotifyParent(this.svg, to, ms));
      else if (pos.has(e.node)) jobs.push(animateNotify(this.svg, pos.get(e.node), to, ms));
    }
    if (!jobs.length) return;
    this.svg.dataset.notifying = String(jobs.length);
    await Promise.all(jobs);
    delete this.svg.dataset.notifying;
  }

  selectClient(name) {
    this.selectedClient = this.selectedClient === name ? '' : name;
    const c = this.state && this.state.clients.find((x) => x.name === this.selectedClient);
    this.selectedNode = c ? c.node || '' : '';
    this.render();
  }

  selectNode(name) {
    const c = this.state && this.state.clients.find((x) => x.node === name || (x.path && x.path.endsWith('/' + name)));
    this.selectedNode = this.selectedNode === name ? '' : name;
    this.selectedClient = this.selectedNode && c ? c.name : '';
    this.render();
  }

  // act asks the simulator to act on a client; it answers the new state, or
  // null when the simulator refused.
  async act(client, action) {
    try {
      showError(null);
      const body = { action };
      if (client) body.client = client;
      const raw = await call('POST', `/runs/${encodeURIComponent(this.id)}/act`, body);
      this.accept(raw);
      return runState(raw);
    } catch (err) {
      showError(`${this.strategy}: ${action}${client ? ' ' + client : ''}: ${err.message}`);
      return null;
    }
  }

  renderMeta() {
    this.el.dataset.step = this.state.step;
    // The speed the server runs at, as the page shows the run.
    this.el.dataset.speed = String(this.state.speed);
    this.el.dataset.steps = this.state.steps;
    this.el.dataset.playing = String(this.state.playing);
  }

  render() {
    const s = this.state;
    if (!s) return;
    this.renderMeta();
    this.el.dataset.path = s.path || '';
    // Narration and violations.
    this.narration.replaceChildren();
    this.narration.append(s.narration || (s.step === 0 ? 'Ready. Press Space to play or → to take one step.' : ''));
    for (const v of s.violations) {
      const b = document.createElement('span');
      b.className = 'violation';
      b.dataset.kind = v.kind || '';
      b.textContent = '⚠ ' + (v.message || v.kind);
      this.narration.append(b);
    }
    if (s.error) {
      const b = document.createElement('span');
      b.className = 'violation';
      b.textContent = '⚠ ' + s.error;
      this.narration.append(b);
    }
    this.el.dataset.busy = String(s.busy);
    this.renderHerd();
    this.timing.observe(s);
    this.el.dataset.clockAt = String(this.timing.at);
    if (s.snapshot) {
      this.positions = drawQueue(this.svg, s.snapshot, {
        selected: this.selectedNode, onSelect: (n) => this.selectNode(n), timing: this.timing, id: 'run-' + this.strategy,
      });
      if (!this.tableEl.hidden) this.table.update(s.snapshot, this.timing, this.selectedNode);
    }
    this.renderClients();
    this.renderPane();
    this.renderPseudo();
    this.renderEvents();
  }

  renderHerd() {
    const s = this.state;
    const st = s.stats || {};
    const last = s.lastRelease;
    const meters = [
      ['notifications', 'notifications', 'watch events delivered'],
      ['getChildren', 'getChildren', 'calls: each woken waiter re-reads the queue'],
      ['wastedWakeups', 'wasted wake-ups', 'woken, but did not acquire'],
      ['exists', 'exists / getData', 'watches set on one node'],
    ];
    const peers = panels.filter((p) => p.state);
    // Bars are scaled to N(N−1)/2, the waiters' wake-ups when every release
    // wakes every remaining waiter (or to the larger run's figure, should
    // that exceed it: the herd scenario's joins and the holders' own
    // leftover watches add more). One run's bars mean something alone.
    const n = s.clients.length;
    const worst = (n * (n - 1)) / 2;
    this.herd.replaceChildren();
    for (const [key, label, help] of meters) {
      let v = st[key] ?? 0;
      if (key === 'exists') v = (st.exists ?? 0) + (st.getData ?? 0);
      const most = Math.max(0, ...peers.map((p) => (key === 'exists' ? (p.state.stats.exists ?? 0) + (p.state.stats.getData ?? 0) : p.state.stats[key] ?? 0)));
      const max = Math.max(1, worst, most);
      const m = document.createElement('div');
      m.className = 'meter' + (key === 'wastedWakeups' && v === 0 ? ' good' : key === 'exists' ? ' good' : '');
      m.dataset.meter = key;
      m.dataset.value = v;
      const lastV = last ? (key === 'exists' ? (last.exists ?? 0) + (last.getData ?? 0) : last[key] ?? 0) : null;
      m.innerHTML = `<small></small><b></b><small class="last"></small><div class="bar"><i></i></div>`;
      m.children[0].textContent = label;
      m.children[1].textContent = String(v);
      m.children[2].textContent = lastV === null ? help : `last release: ${lastV} · ${help}`;
      m.querySelector('i').style.width = `${Math.round((100 * v) / max)}%`;
      const bar = m.querySelector('.bar');
      bar.dataset.max = max;
      bar.title = `${v} of ${max}: ` + (max === worst && worst > 0
        ? `the bar's end is N(N−1)/2 = ${worst}: the waiters' wake-ups when each of ${n} clients' releases wakes every remaining waiter`
        : `the bar's end is the larger run's figure, ${max}`);
      this.herd.append(m);
    }
  }

  renderClients() {
    const s = this.state;
    this.clientsEl.replaceChildren();
    for (const c of s.clients) {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'client' + (c.name === this.selectedClient ? ' selected' : '');
      b.dataset.client = c.name;
      b.dataset.state = c.state || '';
      b.setAttribute('role', 'listitem');
      b.setAttribute('aria-pressed', String(c.name === this.selectedClient));
      const name = document.createElement('strong');
      name.textContent = c.name;
      const st = document.createElement('span');
      st.className = 'cstate';
      st.textContent = [c.mode && modeLabel(c.mode), c.state].filter(Boolean).join(' · ');
      b.append(name, st);
      b.addEventListener('click', () => this.selectClient(c.name));
      this.clientsEl.append(b);
    }
  }

  renderPane() {
    const s = this.state;
    const c = s.clients.find((x) => x.name === this.selectedClient);
    this.pane.replaceChildren();
    if (!c) {
      if (this.selectedNode && s.snapshot) {
        describeNode(this.pane, s.snapshot, this.selectedNode, this.timing);
        return;
      }
      const p = document.createElement('p');
      p.className = 'dim';
      p.textContent = 'Click a client or a node to see its session, node, data and wait, and to release, crash or pause it.';
      this.pane.append(p);
      return;
    }
    const node = s.snapshot && c.node ? (s.snapshot.nodes || []).find((n) => n.name === c.node) : null;
    const dl = document.createElement('dl');
    const add = (k, v, cls) => {
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v;
      if (cls) dd.className = cls;
      dl.append(dt, dd);
      return dd;
    };
    add('client', c.name);
    add('state', (c.state || '') + (c.state === 'stale' ? ': back from a pause that outlasted its session, it still believes it holds' : ''));
    add('session', c.session || (node && node.session) || '—', 'mono');
    add('node', c.node || '—', 'mono');
    if (c.waitsFor) add('waits for client', c.waitsFor);
    if (node) {
      add('mode', modeLabel(node.mode));
      add('data', node.dataBinary ? 'base64 ' + node.data : node.data || '(empty)', 'mono');
      if (!node.holding) add('waits for', node.waitsOn === 'children' ? `children of ${s.snapshot.path}` : node.waitsFor || '—', 'mono');
      add('watches', (node.watching || []).map((p) => p.replace(s.snapshot.path + '/', '')).join(', ') || 'nothing', 'mono');
      const t = add(node.holding ? 'holding for' : 'waiting for', '', 'time');
      t.dataset.since = this.timing.since(node);
      t.dataset.verb = '';
    }
    if (c.token) add('fencing token', String(c.token));
    const acts = document.createElement('div');
    acts.className = 'acts';
    for (const [action, label, help] of [
      ['release', 'release', 'delete its node: the lock passes on'],
      ['crash', 'crash', 'close its session: ZooKeeper deletes its node at once'],
      ['pause', 'pause', 'stop its heartbeats (a GC pause): its session expires later'],
      ['write', 'write', 'write to the protected resource' + (s.fencing ? ' (it checks the fencing token)' : '')],
    ]) {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = label;
      b.title = help;
      b.dataset.action = action;
      b.disabled = !['waiting', 'holding', 'stale', 'paused'].includes(c.state) || (action === 'pause' && c.state === 'paused');
      b.addEventListener('click', () => userAct(c.name, action));
      acts.append(b);
    }
    this.pane.append(dl, acts);
    tick(this.pane);
  }

  renderPseudo() {
    const s = this.state;
    this.pseudo.replaceChildren();
    s.lines.forEach((text, i) => {
      const li = document.createElement('li');
      li.textContent = text;
      // The simulator numbers pseudocode lines from 1.
      if (i + 1 === s.line) {
        li.className = 'current';
        li.setAttribute('aria-current', 'step');
      }
      this.pseudo.append(li);
    });
    this.el.querySelector('.pseudo-box').hidden = !s.lines.length;
  }

  renderEvents() {
    const s = this.state;
    this.eventsEl.replaceChildren();
    for (const e of s.events) {
      if (e.step > s.step) break;
      const li = document.createElement('li');
      li.textContent = e.kind;
      li.dataset.step = e.step;
      if (e.step === s.step) li.className = 'current';
      this.eventsEl.append(li);
    }
    const cur = this.eventsEl.querySelector('li.current');
    if (cur) cur.scrollIntoView({ block: 'nearest' });
  }

  // close ends the panel's run; the promise settles once the server has
  // deleted it.
  close() {
    this.closed = true;
    const closed = this.ws ? closeSocket(this.ws, 1000, 'done') : Promise.resolve();
    if (!this.id) return closed;
    // Delete the run once its socket is closed: a socket still connecting
    // to a deleted run is refused (404), which the browser logs as an error.
    return closed.then(() => call('DELETE', `/runs/${encodeURIComponent(this.id)}`)).catch(() => {});
  }
}

// ---- Showing the runs in lockstep ---------------------------------------
// agreed says whether every run may show its newest state now. Side by side,
// both runs show the same step: a run that got ahead waits for the other,
// as long as the other is still working toward it (an answer pending, a
// step running on ZooKeeper, playback). When nothing is under way the runs
// really differ, and each shows what it has.
function agreed() {
  const newest = panels.map((p) => p.latest()).filter(Boolean);
  if (!newest.length) return false;
  if (newest.length === panels.length && new Set(newest.map((s) => s.step)).size === 1) return true;
  return !inflight && !together && !newest.some((s) => s.busy || s.playing);
}

// show moves every run to its newest state, together: the notifications a
// step delivered are animated in every lane, then every lane is redrawn. A
// run with several states waiting skips to the newest: never lag behind. It
// resolves once nothing more can be shown.
function show() {
  if (!showing) showing = showAll().finally(() => (showing = null));
  return showing;
}

async function showAll() {
  const ps = panels;
  while (ps === panels && ps.some((p) => p.queue.length) && agreed()) {
    const next = ps.map((p) => {
      const s = p.queue.pop();
      p.queue.length = 0;
      return s;
    });
    await Promise.all(ps.map((p, i) => (next[i] && p.state && next[i].step === p.state.step + 1 && !document.hidden ? p.animate(p.state, next[i]) : null)));
    if (ps !== panels) return;
    ps.forEach((p, i) => {
      if (!next[i]) return;
      p.state = next[i];
      p.render();
    });
    syncControls();
  }
}

// userAct sends a client action to every run (in a comparison both runs must
// see the same workload; clients are matched by name) and records it for the
// shareable URL at the step where the lead run took it.
async function userAct(client, action) {
  const gen = generation;
  const results = await Promise.all(panels.filter((p) => p.state).map((p) => p.act(client, action)));
  const lead = results[0];
  if (gen !== generation || !lead) return;
  acts.push({ step: Math.max(0, lead.step - 1), client, action });
  updateURL();
}

// encodeActs writes acts as "step:client:action,…" (client empty for an added
// reader or writer: the simulator names it, the same way on every replay).
export function encodeActs(list) {
  return list.map((a) => `${a.step}:${a.client || ''}:${a.action}`).join(',');
}

export function decodeActs(text) {
  if (!text) return [];
  const out = [];
  for (const part of text.split(',')) {
    const m = part.match(/^(\d+):([A-Za-z0-9_.-]*):([a-z-]+)$/);
    if (m) out.push({ step: Number(m[1]), client: m[2], action: m[3] });
  }
  return out;
}

// ---- Controls -----------------------------------------------------------
function lead() {
  return panels[0] && panels[0].state;
}

function syncControls() {
  const s = lead();
  const total = s ? s.total : 0;
  ui.scrub.max = String(total);
  ui.scrub.value = String(s ? s.step : 0);
  ui.scrub.setAttribute('aria-valuetext', s ? `step ${s.step} of ${total}` : 'no run');
  const busy = panels.some((p) => p.state && p.state.busy);
  let info = s ? `step ${s.step} of ${total}` : 'starting…';
  if (s && s.done) info += ' · done';
  if (playing()) info += ' · playing';
  if (busy) info += ' · working on ZooKeeper…';
  if (s && s.next && !playing()) info += ` · next: ${s.next.client ? s.next.client + ' ' : ''}${s.next.action}`;
  ui.stepInfo.textContent = info;
  ui.stepInfo.dataset.step = s ? s.step : 0;
  document.body.dataset.step = s ? s.step : '';
  document.body.dataset.busy = String(busy);
  const on = playing();
  ui.play.textContent = on ? '❚❚ pause' : '▶ play';
  ui.play.setAttribute('aria-label', on ? 'pause' : 'play');
  ui.play.setAttribute('aria-pressed', String(on));
  document.body.dataset.playing = String(on);
  ui.back.disabled = !s || s.step <= 0;
  ui.step.disabled = !s || s.done;
  ui.step.title = s && s.next ? `step forward (→): ${s.next.client ? s.next.client + ' ' : ''}${s.next.action}` : 'step forward (→)';
  const rw = !s || s.lock === 'rw';
  ui.addReader.textContent = rw ? '+ reader' : '+ client';
  ui.addReader.dataset.action = rw ? 'add-reader' : 'add';
  ui.addWriter.hidden = !rw;
  renderTicks();
  for (const p of panels) if (p.state) p.renderHerd();
  updateURL();
}

// renderTicks marks every step on the timeline: coloured by what happened
// for the steps shown so far, outlined for recorded or planned ones ahead.
function renderTicks() {
  const s = lead();
  ui.ticks.replaceChildren();
  if (!s || !s.total) return;
  const first = new Map();
  for (const e of s.events) if (!first.has(e.step)) first.set(e.step, e);
  for (let k = 1; k <= s.total; k++) {
    const e = first.get(k);
    const b = document.createElement('button');
    b.type = 'button';
    b.tabIndex = -1;
    b.className = (e ? 'k-' + String(e.kind).toLowerCase().replace(/[^a-z]/g, '') : k <= s.steps ? 'recorded' : 'planned') + (k === s.step ? ' current' : '');
    b.style.left = `${(100 * k) / s.total}%`;
    b.title = e ? `step ${k}: ${e.client ? e.client + ' ' : ''}${e.kind}` : `step ${k}` + (k <= s.steps ? ' (recorded)' : ' (not played yet)');
    b.dataset.step = k;
    b.addEventListener('click', () => seek(k));
    ui.ticks.append(b);
  }
}

// updateURL makes the address say everything needed to replay what is shown:
// scenario, strategy, the client count and fencing when they differ from the
// scenario's own, the actions taken, and the step.
function updateURL() {
  if (replaying) return; // the URL still says where the replay is going
  const s = lead();
  const u = new URL(location.href);
  const info = scenarioInfo();
  u.searchParams.set('scenario', ui.scenario.value);
  u.searchParams.set('strategy', ui.strategy.value);
  if (info.clients && Number(ui.clients.value) !== info.clients) u.searchParams.set('clients', ui.clients.value);
  else u.searchParams.delete('clients');
  if (ui.fencing.checked !== !!info.fencing) u.searchParams.set('fencing', ui.fencing.checked ? '1' : '0');
  else u.searchParams.delete('fencing');
  if (acts.length) u.searchParams.set('acts', encodeActs(acts));
  else u.searchParams.delete('acts');
  if (s && s.step) u.searchParams.set('step', s.step);
  else u.searchParams.delete('step');
  history.replaceState(null, '', u);
}

// command sends a command to every run; it answers whether all took it.
async function command(path, body) {
  showError(null);
  const gen = generation;
  const ok = await Promise.all(
    panels.map(async (p) => {
      if (!p.id) return true;
      try {
        const raw = await call('POST', `/runs/${encodeURIComponent(p.id)}${path}`, body);
        if (gen === generation && raw) p.accept(raw);
        return true;
      } catch (err) {
        showError(`${p.strategy}: ${path.slice(1)}: ${err.message}`);
        return false;
      }
    }),
  );
  return ok.every(Boolean);
}

function playing() {
  return !!together || panels.some((p) => p.state && p.state.playing);
}

// PLAY_INTERVAL_MS is the simulator's playInterval (simulator/run.go): a
// step every 1.2 s at 1×.
const PLAY_INTERVAL_MS = 1200;
// playTogether plays a comparison until the end or a pause. A play pressed
// while the last one is still finishing its step starts after it, so two
// loops never step the runs at once.
let playLoop = Promise.resolve();
function playTogether() {
  const me = (together = { gen: generation });
  syncControls();
  playLoop = playLoop.then(() => playSteps(me));
  return playLoop;
}

async function playSteps(me) {
  const going = () => together === me && me.gen === generation;
  try {
    if (!going()) return;
    if (lead() && lead().done && !(await command('/seek', { step: 0 }))) return;
    while (going()) {
      const s = panels[0] && panels[0].latest();
      if (!s || s.done || !(await command('/step'))) break;
      // Every step is shown, its notifications animated, before the next.
      await Promise.all([show(), new Promise((r) => setTimeout(r, PLAY_INTERVAL_MS / speedOf(Number(ui.speed.value))))]);
    }
  } finally {
    if (together === me) together = null;
    setTimeout(show, 0);
    syncControls();
  }
}

function stopTogether() {
  together = null;
}

const actions = {
  toggle: () => {
    if (together) return stopTogether();
    if (panels.length > 1) return playTogether();
    return command(playing() ? '/pause' : '/play');
  },
  step: () => {
    stopTogether();
    return command('/step');
  },
  back: () => {
    stopTogether();
    return command('/back');
  },
  first: () => seek(0),
  last: () => seek(Number(ui.scrub.max)),
  slower: () => setSpeed(Number(ui.speed.value) - 0.5),
  faster: () => setSpeed(Number(ui.speed.value) + 0.5),
  reader: () => userAct('', ui.addReader.dataset.action || 'add-reader'),
  writer: () => {
    if (!ui.addWriter.hidden) userAct('', 'add-writer');
  },
};

function seek(step) {
  stopTogether();
  return command('/seek', { step: Math.max(0, step) });
}

function speedOf(v) {
  return Math.round(2 ** v * 1000) / 1000;
}

function setSpeed(v) {
  v = Math.min(Number(ui.speed.max), Math.max(Number(ui.speed.min), v));
  ui.speed.value = String(v);
  const sp = speedOf(v);
  ui.speedOut.textContent = (sp < 1 ? sp.toFixed(sp < 0.25 ? 3 : 2).replace(/0+$/, '') : String(sp)) + '×';
  return sendSpeed(sp);
}

// sendSpeed sends one speed at a time, the newest last: two quick key
// presses are two POSTs the server may take in either order, and the run
// would keep the older speed while the page shows the newer one.
let speedWanted = null;
let speedSending = null;
function sendSpeed(sp) {
  speedWanted = sp;
  if (!speedSending) {
    speedSending = (async () => {
      let ok = true;
      while (speedWanted !== null) {
        const next = speedWanted;
        speedWanted = null;
        ok = await command('/speed', { speed: next });
      }
      speedSending = null;
      return ok;
    })();
  }
  return speedSending;
}

async function loadScenarios() {
  const data = await call('GET', '/scenarios');
  scenarios = data || []; // simulator.ScenarioInfo, one per scenario
  ui.scenario.replaceChildren();
  for (const sc of scenarios) {
    const o = document.createElement('option');
    o.value = sc.id;
    o.textContent = sc.title;
    if (sc.description) o.title = sc.description;
    ui.scenario.append(o);
  }
  const want = ui.scenario.dataset.initial;
  if (want && scenarios.some((s) => s.id === want)) ui.scenario.value = want;
  else if (want) showError(`unknown scenario "${want}"; showing ${ui.scenario.value || 'none'}`);
}

function scenarioInfo() {
  return scenarios.find((s) => s.id === ui.scenario.value) || {};
}

async function restart() {
  generation++;
  together = null;
  const gen = generation;
  acts = [];
  const old = panels;
  panels = [];
  ui.runs.replaceChildren();
  showError(null);
  // The old runs go first: at the server's run limit a new one would be
  // refused while they live.
  await Promise.all(old.map((p) => p.close()));
  if (gen !== generation) return;
  const info = scenarioInfo();
  // A scenario whose recipe has no strategy to choose says why, beside the
  // control it disables.
  const fixed = info.strategyFixed || '';
  ui.strategy.disabled = !!fixed;
  ui.strategy.title = fixed;
  ui.strategyFixed.hidden = !fixed;
  ui.strategyFixed.textContent = fixed ? `${info.strategy}: ${fixed}` : '';
  const compare = !fixed && ui.strategy.value === 'compare';
  ui.runs.classList.toggle('compare', compare);
  const strategies = fixed ? [info.strategy] : compare ? ['herd', 'predecessor'] : [ui.strategy.value];
  panels = strategies.map((st) => new Panel(st, compare));
  for (const p of panels) ui.runs.append(p.el);
  // Only scenarios with a "*" step take a client count; the others name theirs.
  ui.clients.closest('label').hidden = !info.clients;
  if (info.clients && !ui.clients.dataset.touched) ui.clients.value = info.clients;
  if (!ui.fencing.dataset.touched) ui.fencing.checked = !!info.fencing;
  const clients = info.clients ? Number(ui.clients.value) || 0 : 0;
  try {
    await Promise.all(panels.map((p) => p.start(ui.scenario.value, clients, ui.fencing.checked, gen)));
  } catch (err) {
    showError(`could not start the run: ${err.message}`);
    // At the run limit the list shows what to delete.
    ui.runList.open = true;
  }
  refreshRuns();
  if (gen === generation) {
    const sp = speedOf(Number(ui.speed.value));
    if (sp !== 1) command('/speed', { speed: sp });
    if (replaying) await replay(gen);
    syncControls();
  }
}

// replay takes a shared link's actions, each at its step, then shows its step.
async function replay(gen) {
  const want = replaying;
  try {
    for (const a of want.acts) {
      if (gen !== generation) return;
      await seek(a.step);
      const results = await Promise.all(panels.map((p) => p.act(a.client, a.action)));
      if (!results[0]) throw new Error(`could not replay ${a.client ? a.client + ' ' : ''}${a.action} at step ${a.step}`);
      acts.push(a);
    }
    if (gen === generation && want.step > 0) await seek(want.step);
  } catch (err) {
    showError(`shared link: ${err.message}`);
  } finally {
    if (gen === generation) replaying = null;
  }
}

// ---- Open runs ----------------------------------------------------------
// refreshRuns lists the server's open runs, so a teacher sees what holds
// ZooKeeper sessions and can delete what another tab left. This tab's own
// runs are marked, not offered for deletion: restart replaces them.
async function refreshRuns() {
  let runs;
  try {
    runs = await call('GET', '/runs');
  } catch (err) {
    ui.runCount.textContent = `(could not list: ${err.message})`;
    return;
  }
  const mine = new Set(panels.map((p) => p.id).filter(Boolean));
  ui.runCount.textContent = `(${runs.length})`;
  ui.runItems.replaceChildren();
  for (const r of runs) {
    const li = document.createElement('li');
    li.dataset.run = r.id;
    const what = document.createElement('span');
    what.textContent = `${r.title || r.scenario} · ${r.strategy} · step ${r.step} of ${Math.max(r.steps, r.planned)}${r.playing ? ' · playing' : ''}`;
    li.append(what, ' ');
    if (mine.has(r.id)) {
      const tag = document.createElement('span');
      tag.className = 'dim';
      tag.textContent = '(this tab)';
      li.append(tag);
    } else {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = 'delete';
      b.dataset.delete = r.id;
      b.setAttribute('aria-label', `delete run ${r.id} (${r.title || r.scenario})`);
      b.addEventListener('click', async () => {
        b.disabled = true;
        // A run gone already (closed by its own tab) is what was wanted.
        await call('DELETE', `/runs/${encodeURIComponent(r.id)}`).catch(() => {});
        refreshRuns();
      });
      li.append(b);
    }
    ui.runItems.append(li);
  }
}

ui.runList.addEventListener('toggle', () => {
  if (ui.runList.open) refreshRuns();
});
setInterval(() => {
  if (ui.runList.open && !document.hidden) refreshRuns();
}, 5000);

// ---- Wiring -------------------------------------------------------------
ui.play.addEventListener('click', actions.toggle);
ui.step.addEventListener('click', actions.step);
ui.back.addEventListener('click', actions.back);
ui.restart.addEventListener('click', restart);
ui.addReader.addEventListener('click', actions.reader);
ui.addWriter.addEventListener('click', actions.writer);
// A select or number field keeps the focus after a change, and the page's
// keys (Space, the arrows) would go to it: hand the focus back to the page.
for (const el of [ui.scenario, ui.strategy, ui.clients]) el.addEventListener('change', () => el.blur());
ui.scenario.addEventListener('change', () => {
  delete ui.clients.dataset.touched;
  delete ui.fencing.dataset.touched;
  restart();
});
// Changing the strategy replays the same actions to the same step, so the
// comparison is on the same workload.
function restartKeeping() {
  const s = lead();
  if (acts.length || (s && s.step)) replaying = { acts: acts.slice(), step: s ? s.step : 0 };
  return restart();
}
ui.strategy.addEventListener('change', restartKeeping);
ui.fencing.addEventListener('change', () => {
  ui.fencing.dataset.touched = '1';
  restart();
});
ui.clients.addEventListener('change', () => {
  ui.clients.dataset.touched = '1';
  restart();
});
ui.speed.addEventListener('input', () => setSpeed(Number(ui.speed.value)));
ui.scrub.addEventListener('change', () => seek(Number(ui.scrub.value)));
ui.share.addEventListener('click', async () => {
  updateURL();
  try {
    await navigator.clipboard.writeText(location.href);
    ui.share.textContent = 'link copied ✓';
  } catch {
    ui.share.textContent = 'link in the address bar';
  }
  setTimeout(() => (ui.share.textContent = 'share link'), 2000);
});
$('shortcuts-close').addEventListener('click', () => (ui.shortcuts.hidden = true));
ui.shortcuts.addEventListener('click', (e) => {
  if (e.target === ui.shortcuts) ui.shortcuts.hidden = true;
});

function toggleTable() {
  showTable = !showTable;
  for (const p of panels) {
    p.tableEl.hidden = !showTable;
    if (showTable && p.state && p.state.snapshot) p.table.update(p.state.snapshot, p.timing, p.selectedNode);
  }
}

document.addEventListener('keydown', (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const t = e.target;
  const typing = t && (t.tagName === 'SELECT' || t.tagName === 'TEXTAREA' || (t.tagName === 'INPUT' && !['range', 'checkbox'].includes(t.type)) || t.isContentEditable);
  if (typing || (t && t.id === 'speed')) return;
  if (!ui.shortcuts.hidden) {
    if (e.key === 'Escape' || e.key === '?') {
      ui.shortcuts.hidden = true;
      e.preventDefault();
    }
    return;
  }
  const keys = {
    ' ': actions.toggle, ArrowRight: actions.step, ArrowLeft: actions.back, Home: actions.first, End: actions.last,
    '[': actions.slower, ']': actions.faster, r: actions.reader, w: actions.writer, t: toggleTable,
    c: () => {
      if (ui.strategy.disabled) return;
      ui.strategy.value = ui.strategy.value === 'compare' ? 'predecessor' : 'compare';
      restartKeeping();
    },
    '?': () => (ui.shortcuts.hidden = false),
    Escape: () => {
      for (const p of panels) {
        p.selectedClient = '';
        p.selectedNode = '';
        p.render();
      }
    },
  };
  const fn = keys[e.key];
  if (!fn) return;
  // Space and the arrows would also press the focused button or move the
  // focused slider: the shortcut replaces that.
  e.preventDefault();
  fn();
});

window.addEventListener('pagehide', () => {
  for (const p of panels) {
    if (p.id) fetch(`${API}/runs/${encodeURIComponent(p.id)}`, { method: 'DELETE', keepalive: true }).catch(() => {});
  }
});
setInterval(() => tick(ui.runs), 1000);

async function main() {
  legend($('legend'));
  const strategy = ui.strategy.dataset.initial;
  if (strategy) ui.strategy.value = strategy;
  const step = Number($('step-info').dataset.step || 0);
  const q = new URLSearchParams(location.search);
  const wantActs = decodeActs(q.get('acts') || '');
  if (step > 0 || wantActs.length) replaying = { step, acts: wantActs };
  if (q.has('clients') && Number(q.get('clients')) > 0) {
    ui.clients.value = String(Number(q.get('clients')));
    ui.clients.dataset.touched = '1';
  }
  if (q.has('fencing')) {
    ui.fencing.checked = q.get('fencing') === '1';
    ui.fencing.dataset.touched = '1';
  }
  ui.speedOut.textContent = speedOf(Number(ui.speed.value)) + '×';
  try {
    await loadScenarios();
  } catch (err) {
    showError(`could not load the scenarios: ${err.message}`);
    return;
  }
  await restart();
}

main();
