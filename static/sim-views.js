// sim-views.js draws the parts of one classroom run from its State
// (simulator/run.go) that the server does not render: the herd meter, the
// selected client's pane and what the run's servers hold. Each is a
// function of the state alone; sim-panel.js puts them together.

import { tick, modeLabel, say } from './queue.js';

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

// serviceWords are the classroom's words of every registered service
// (lockservice.ClassroomsWords, #service-words): each service's classroom
// supplies its own, so nothing here branches on a service's name.
const serviceWords = JSON.parse((document.getElementById('service-words') || {}).textContent || '{}');

// wordsOf is the classroom words of a service, named as the classroom API
// names it: a run that names none is on the default service.
export function wordsOf(service) {
  const all = serviceWords.services || {};
  return all[service || serviceWords.default] || { title: service || '', hint: '', actions: {}, meters: [] };
}

// sideBySide is scenario 12 as the scenario list shows it: its id, title
// and description (lockservice.SideBySide).
export function sideBySide() {
  return serviceWords.side || {};
}

// sayOf says key in service's terms: its classroom's own phrase
// (ClassroomWords.say) when it has one, else the page's (say); either is
// filled by say.
export function sayOf(service, key, vars) {
  return say((wordsOf(service).say || {})[key] ?? key, vars);
}

// serviceQuery is what an API path adds to reach a service's classroom:
// nothing for the default service.
export function serviceQuery(service) {
  return service && service !== serviceWords.default ? `?service=${encodeURIComponent(service)}` : '';
}

// herdMeter shows the run's requests as its service counts them (its
// classroom's meters; ZooKeeper's watch traffic) and what its servers hold;
// peers are the states of every run on the page, whose largest figure may
// scale the bars.
export function herdMeter(root, s, peers) {
  const words = wordsOf(s.service);
  const valueOf = (stats, m) => (m.sum && m.sum.length ? m.sum : [m.key]).reduce((n, k) => n + ((stats || {})[k] ?? 0), 0);
  root.replaceChildren();
  if (!words.pairsScale) {
    for (const m of words.meters) {
      const v = valueOf(s.stats, m);
      const max = Math.max(1, v, ...peers.map((p) => valueOf(p.stats, m)));
      root.append(meterOf(m, v, m.help, max, say('meter.ofLargest', { v, max })));
    }
    serverView(root, s);
    return;
  }
  const last = s.lastRelease;
  // Bars are scaled to N(N−1)/2, the waiters' wake-ups when every release
  // wakes every remaining waiter (or to the larger run's figure, should
  // that exceed it: the herd scenario's joins and the holders' own
  // leftover watches add more). One run's bars mean something alone.
  const n = s.clients.length;
  const worst = (n * (n - 1)) / 2;
  for (const m of words.meters) {
    const v = valueOf(s.stats, m);
    const most = Math.max(0, ...peers.map((p) => valueOf(p.stats, m)));
    const max = Math.max(1, worst, most);
    const lastV = last ? valueOf(last, m) : null;
    const help = lastV === null ? m.help : say('meter.lastRelease', { last: lastV, help: m.help });
    root.append(meterOf(m, v, help, max, say(max === worst && worst > 0 ? 'meter.ofPairs' : 'meter.ofLarger', { v, max, worst, n })));
  }
}

// meterOf is meter m's bar at v of max, marked good as its words say.
function meterOf(m, v, help, max, scale) {
  const el = meter(m.key, m.label, help, v, max, scale);
  if (m.good || (m.goodAtZero && v === 0)) el.classList.add('good');
  return el;
}

// snapshotOf is the step's snapshot that has node name: the lock the live
// reader follows, or one of a scene's locks (a PostgreSQL row that the
// table's queue no longer shows once nobody waits for it).
export function snapshotOf(s, name) {
  const has = (snap) => snap && (snap.nodes || []).some((n) => n.name === name);
  return [s.snapshot, ...(s.locks || [])].find(has) || s.snapshot;
}

// clientPane shows the selected client (or node) and the actions a
// teacher may take on it.
// nodePane(root, name) fills root with node name's details (from the
// server, views.NodeDetailsView): the selected node's when no client is
// selected, and below a client of another service than ZooKeeper.
export function clientPane(root, s, { client, node: selectedNode, timing, onAct, nodePane }) {
  const c = s.clients.find((x) => x.name === client);
  root.replaceChildren();
  if (!c) {
    if (selectedNode && s.snapshot) {
      nodePane(root, selectedNode);
      return;
    }
    const p = document.createElement('p');
    p.className = 'dim';
    p.textContent = wordsOf(s.service).hint;
    root.append(p);
    return;
  }
  const snap = c.node ? snapshotOf(s, c.node) : null;
  const node = snap && (snap.nodes || []).find((n) => n.name === c.node);
  const [dl, add] = definitions();
  // A node is described by the server, in its service's terms
  // (views.NodeDetails: a PostgreSQL backend as pg_activity shows it),
  // below the client's own lines, unless the service's words show the
  // node here (ZooKeeper's znodes).
  const words = wordsOf(s.service);
  const serverPane = node && !words.nodeLines;
  add(say('pane.client'), c.name);
  add(say('pane.state'), (c.state || '') + (c.state === 'stale' ? say('pane.stale') : ''));
  if (!serverPane) {
    // A service without sessions (Redis: a key and its token) shows none.
    const session = c.session || (node && node.session);
    if (session) add(say('pane.session'), session, 'mono');
    add(say('pane.node'), c.node || '—', 'mono');
  }
  if (c.waitsFor) add(say('pane.waitsClient'), c.waitsFor);
  if (node && !serverPane) {
    add(say('pane.mode'), modeLabel(node.mode));
    add(say('pane.data'), node.dataBinary ? say('pane.binary', { data: node.data }) : node.data || say('pane.empty'), 'mono');
    if (!node.holding) add(say('pane.waitsFor'), node.waitsOn === 'children' ? say('pane.children', { path: s.snapshot.path }) : node.waitsFor || '—', 'mono');
    add(say('pane.watches'), (node.watching || []).map((p) => p.replace(s.snapshot.path + '/', '')).join(', ') || say('pane.nothing'), 'mono');
    const t = add(say(node.holding ? 'details.holdingFor' : 'pane.waitingFor'), '', 'time');
    t.dataset.since = timing.since(node);
    t.dataset.verb = '';
  }
  if (c.token) add(say('pane.token'), String(c.token));
  const acts = document.createElement('div');
  acts.className = 'acts';
  const help = { ...words.actions, write: say(s.fencing ? 'pane.writeFencing' : 'pane.write') };
  for (const action of ['release', 'crash', 'pause', 'write']) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = say('act.' + action);
    b.title = help[action];
    b.dataset.action = action;
    b.disabled = !['waiting', 'holding', 'stale', 'paused'].includes(c.state) || (action === 'pause' && c.state === 'paused');
    b.addEventListener('click', () => onAct(c.name, action));
    acts.append(b);
  }
  root.append(dl);
  if (serverPane) {
    const more = document.createElement('div');
    more.className = 'server-details';
    root.append(more);
    nodePane(more, c.node);
  }
  root.append(acts);
  tick(root);
}

// meter is one meter: a figure, what it counts and a bar of v out of max.
function meter(key, label, help, v, max, barTitle) {
  const m = document.createElement('div');
  m.className = 'meter';
  m.dataset.meter = key;
  m.dataset.value = v;
  m.innerHTML = `<small></small><b></b><small class="last"></small><div class="bar"><i></i></div>`;
  m.children[0].textContent = label;
  m.children[1].textContent = String(v);
  m.children[2].textContent = help;
  m.querySelector('i').style.width = `${Math.round((100 * v) / max)}%`;
  const bar = m.querySelector('.bar');
  bar.dataset.max = max;
  bar.title = barTitle;
  return m;
}

const svgNS = 'http://www.w3.org/2000/svg';

function svgEl(name, attrs) {
  const el = document.createElementNS(svgNS, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

function seconds(ms) {
  return `${(ms / 1000).toFixed(1)}s`;
}

// serverView draws what the run's servers hold beyond the lane
// (simulator.Servers, read from the servers): each Redlock master's copy
// of the key, and the key's time to live over the run's time.
function serverView(root, s) {
  const sv = s.servers;
  if (!sv) return;
  const box = document.createElement('div');
  box.className = 'servers';
  const says = (key, vars) => sayOf(s.service, key, vars);
  if (sv.masters && sv.masters.length) box.append(mastersView(sv.masters, sv.ttlMs || 0, says));
  if (sv.ttl && sv.ttl.length) box.append(ttlView(sv.ttl, sv.ttlMs || 0, s.clockMs || 0, says));
  root.append(box);
}

// mastersView is one small box per master: whose token its copy of the
// key holds and its time left, or that it is empty or down; says words it
// in the run's service's terms.
function mastersView(masters, ttlMs, says) {
  const wrap = document.createElement('div');
  wrap.className = 'masters';
  wrap.dataset.masters = masters.length;
  wrap.setAttribute('role', 'list');
  wrap.setAttribute('aria-label', says('masters.aria', { n: masters.length }));
  const quorum = Math.floor(masters.length / 2) + 1;
  const copies = new Map();
  for (const m of masters) if (m.up && m.client) copies.set(m.client, (copies.get(m.client) || 0) + 1);
  for (const m of masters) {
    const d = document.createElement('div');
    d.setAttribute('role', 'listitem');
    d.dataset.master = m.name;
    d.dataset.up = String(m.up);
    d.dataset.client = m.up ? m.client || '' : '';
    const state = !m.up ? 'down' : m.client ? 'held' : 'empty';
    d.className = 'master ' + state;
    const name = document.createElement('strong');
    name.textContent = m.name;
    const who = document.createElement('span');
    who.className = 'who';
    const bar = document.createElement('div');
    bar.className = 'bar';
    const fill = document.createElement('i');
    bar.append(fill);
    const vars = { name: m.name, addr: m.addr, client: m.client, token: m.token, leftMs: m.leftMs, left: seconds(m.leftMs || 0), of: masters.length };
    if (!m.up || !m.client) {
      who.textContent = says(m.up ? 'master.empty' : 'master.down');
      d.title = says(m.up ? 'master.emptyTitle' : 'master.downTitle', vars);
    } else {
      const n = copies.get(m.client) || 0;
      who.textContent = says('master.held', vars);
      d.classList.toggle('majority', n >= quorum);
      d.title = says('master.heldTitle', { ...vars, n, majority: says(n >= quorum ? 'master.majority' : 'master.minority') });
      if (ttlMs > 0) fill.style.width = `${Math.max(0, Math.min(100, (100 * (m.leftMs || 0)) / ttlMs))}%`;
    }
    d.append(name, who, bar);
    wrap.append(d);
  }
  return wrap;
}

// ttlView is the key's remaining time (PTTL samples) over the run's time,
// a line per holder: a renewal shows as a rise, an expiry as a fall to the
// floor, a new holder's key as a new line; says words it in the run's
// service's terms.
function ttlView(samples, ttlMs, clockMs, says) {
  const W = 600;
  const H = 64;
  const top = Math.max(ttlMs, ...samples.map((x) => x.leftMs), 1);
  const end = Math.max(clockMs, samples[samples.length - 1].atMs, 1);
  const x = (ms) => ((W * ms) / end).toFixed(1);
  const y = (ms) => (H - 4 - ((H - 8) * ms) / top).toFixed(1);
  const fig = document.createElement('figure');
  fig.className = 'ttl';
  const svg = svgEl('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img' });
  svg.append(svgEl('line', { class: 'floor', x1: 0, x2: W, y1: y(0), y2: y(0) }));
  // One line per holder's stretch; no key is drawn on the floor.
  let run = null;
  const runs = [];
  for (const p of samples) {
    if (!run || run.holder !== p.holder) {
      run = { holder: p.holder, points: [] };
      runs.push(run);
    }
    run.points.push(p);
  }
  let rises = 0;
  for (const r of runs) {
    const line = svgEl('polyline', {
      class: r.holder ? 'held' : 'none', points: r.points.map((p) => `${x(p.atMs)},${y(p.leftMs)}`).join(' '),
    });
    line.dataset.holder = r.holder || '';
    svg.append(line);
    for (let i = 1; i < r.points.length; i++) {
      if (r.holder && r.points[i].leftMs > r.points[i - 1].leftMs + 100) {
        rises++;
        svg.append(svgEl('circle', { class: 'renewal', cx: x(r.points[i].atMs), cy: y(r.points[i].leftMs), r: 2.5 }));
      }
    }
  }
  const holders = [...new Set(runs.filter((r) => r.holder).map((r) => r.holder))];
  svg.setAttribute('aria-label', says('ttl.aria', { span: seconds(end), rises, holders: holders.join(', ') || says('ttl.nobody') }));
  svg.dataset.points = samples.length;
  svg.dataset.rises = rises;
  const cap = document.createElement('figcaption');
  const last = samples[samples.length - 1];
  cap.textContent = says('ttl.caption', { lease: ttlMs ? says('ttl.lease', { lease: seconds(ttlMs) }) : '' }) +
    (last.holder ? says('ttl.left', { holder: last.holder, left: seconds(last.leftMs) }) : says('ttl.noKey')) + (rises ? says('ttl.renewals', { n: rises }) : '') +
    (holders.length ? says('ttl.heldBy', { holders: holders.join(' → ') }) : '');
  fig.append(svg, cap);
  return fig;
}
