// sim-views.js draws the parts of one classroom run from its State
// (simulator/run.go): the herd meter, the clients, the selected client's
// pane, the recipe's pseudocode and the event log. Each is a function of
// the state alone; sim-panel.js puts them together.

import { tick, modeLabel } from './queue.js';

// definitions makes a <dl> and add(term, text, class), which appends one
// entry and answers its <dd>.
function definitions() {
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
  return [dl, add];
}

// herdMeter shows the run's watch traffic; peers are the states of every
// run on the page, whose largest figure may scale the bars.
export function herdMeter(root, s, peers) {
  const st = s.stats || {};
  const last = s.lastRelease;
  const meters = [
    ['notifications', 'notifications', 'watch events delivered'],
    ['getChildren', 'getChildren', 'calls: each woken waiter re-reads the queue'],
    ['wastedWakeups', 'wasted wake-ups', 'woken, but did not acquire'],
    ['exists', 'exists / getData', 'watches set on one node'],
  ];
  // Bars are scaled to N(N−1)/2, the waiters' wake-ups when every release
  // wakes every remaining waiter (or to the larger run's figure, should
  // that exceed it: the herd scenario's joins and the holders' own
  // leftover watches add more). One run's bars mean something alone.
  const n = s.clients.length;
  const worst = (n * (n - 1)) / 2;
  root.replaceChildren();
  for (const [key, label, help] of meters) {
    let v = st[key] ?? 0;
    if (key === 'exists') v = (st.exists ?? 0) + (st.getData ?? 0);
    const most = Math.max(0, ...peers.map((p) => (key === 'exists' ? (p.stats.exists ?? 0) + (p.stats.getData ?? 0) : p.stats[key] ?? 0)));
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
    root.append(m);
  }
}

// clientList lists the run's clients as buttons; selected is the chosen
// one's name.
export function clientList(root, s, selected, onSelect) {
  root.replaceChildren();
  for (const c of s.clients) {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'client' + (c.name === selected ? ' selected' : '');
    b.dataset.client = c.name;
    b.dataset.state = c.state || '';
    b.setAttribute('role', 'listitem');
    b.setAttribute('aria-pressed', String(c.name === selected));
    const name = document.createElement('strong');
    name.textContent = c.name;
    const st = document.createElement('span');
    st.className = 'cstate';
    st.textContent = [c.mode && modeLabel(c.mode), c.state].filter(Boolean).join(' · ');
    b.append(name, st);
    b.addEventListener('click', () => onSelect(c.name));
    root.append(b);
  }
}

// clientPane shows the selected client (or node) and the actions a
// teacher may take on it.
// nodePane(root) fills root with the selected node's details (from the
// server, views.NodeDetailsView) when no client is selected.
export function clientPane(root, s, { client, node: selectedNode, timing, onAct, nodePane }) {
  const c = s.clients.find((x) => x.name === client);
  root.replaceChildren();
  if (!c) {
    if (selectedNode && s.snapshot) {
      nodePane(root);
      return;
    }
    const p = document.createElement('p');
    p.className = 'dim';
    p.textContent = 'Click a client or a node to see its session, node, data and wait, and to release, crash or pause it.';
    root.append(p);
    return;
  }
  const node = s.snapshot && c.node ? (s.snapshot.nodes || []).find((n) => n.name === c.node) : null;
  const [dl, add] = definitions();
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
    t.dataset.since = timing.since(node);
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
    b.addEventListener('click', () => onAct(c.name, action));
    acts.append(b);
  }
  root.append(dl, acts);
  tick(root);
}

// pseudocode shows the recipe the clients follow, its current line marked;
// box hides when the run has none.
export function pseudocode(root, box, s) {
  root.replaceChildren();
  s.lines.forEach((text, i) => {
    const li = document.createElement('li');
    li.textContent = text;
    // The simulator numbers pseudocode lines from 1.
    if (i + 1 === s.line) {
      li.className = 'current';
      li.setAttribute('aria-current', 'step');
    }
    root.append(li);
  });
  box.hidden = !s.lines.length;
}

// eventLog lists the events up to the shown step.
export function eventLog(root, s) {
  root.replaceChildren();
  for (const e of s.events) {
    if (e.step > s.step) break;
    const li = document.createElement('li');
    li.textContent = e.kind;
    li.dataset.step = e.step;
    if (e.step === s.step) li.className = 'current';
    root.append(li);
  }
  const cur = root.querySelector('li.current');
  if (cur) cur.scrollIntoView({ block: 'nearest' });
}
