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

// serviceQuery is what an API path adds to reach a service's classroom:
// nothing for the default service.
export function serviceQuery(service) {
  return service && service !== serviceWords.default ? `?service=${encodeURIComponent(service)}` : '';
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
