// lock.js runs the lock view: one live queue, its alerts, a detail pane and
// the table, with a banner whenever what is shown is not live.

import { drawQueue, Timing, tick, legend, HEAD, TAIL, MAX_EXTRA } from './queue.js';

// ALERT_NAMES is how many nodes the model names in one alert (lockqueue).
const ALERT_NAMES = 50;
import { LiveLock, lockQuery } from './live.js';
import { QueueTable, startNodeClock } from './table.js';

const body = document.body;
const path = body.dataset.path;
const service = body.dataset.service || '';
// title names the lock's service in the banner ("ZooKeeper is unreachable").
const title = body.dataset.serviceTitle || 'ZooKeeper';
const svg = document.getElementById('lane');
const banner = document.getElementById('banner');
const alertsEl = document.getElementById('alerts');
const details = document.getElementById('details');
const summary = document.getElementById('summary');
const foldNote = document.getElementById('fold-note');
const timing = new Timing();
let snap = null;
let socket = { socket: 'connecting', attempt: 0 };
let selected = new URLSearchParams(location.search).get('node') || '';
let lastLiveAt = null;
let live = null; // the LiveLock, once the path is watched

legend(document.getElementById('legend'));
// The table's pages are the server's, of the newest snapshot of this lock,
// and come with the summary and the alerts of the same snapshot.
const table = new QueueTable(document.getElementById('table'), {
  onSelect: select,
  source: (q) => fetch('/parts/lock?' + lockQuery(q, service, path)),
  onParts: showParts,
});

function select(name) {
  selected = name === selected ? '' : name;
  const u = new URL(location.href);
  if (selected) u.searchParams.set('node', selected);
  else u.searchParams.delete('node');
  history.replaceState(null, '', u);
  render();
  if (selected) table.show(selected);
}

function isLive() {
  return socket.socket === 'open' && snap && snap.connection === 'connected' && !snap.error;
}

function renderBanner() {
  if (!live) {
    // Not watched: the page says so in its own card; nothing is stale.
    body.dataset.live = 'false';
    body.dataset.socket = 'none';
    banner.hidden = true;
    return;
  }
  const now = isLive();
  body.dataset.live = now ? 'true' : 'false';
  body.dataset.socket = socket.socket;
  if (now) {
    banner.hidden = true;
    banner.textContent = '';
    return;
  }
  let why;
  if (socket.socket !== 'open') {
    why = snap
      ? `lost the connection to the zklockviz server; reconnecting` + (socket.attempt ? ` (attempt ${socket.attempt})` : '') + '…'
      : 'connecting to the zklockviz server…';
  } else if (!snap) {
    why = 'waiting for the first snapshot…';
  } else if (snap.connection === 'expired') {
    why = `the watcher's ${title} session expired; it is starting a new one`;
  } else if (snap.connection !== 'connected') {
    why = `${title} is unreachable; the watcher is reconnecting`;
  } else {
    why = `the last read from ${title} failed: ${snap.error}`;
  }
  const when = lastLiveAt ? ` Showing the state last seen live at ${new Date(lastLiveAt).toLocaleTimeString()}.` : '';
  banner.hidden = false;
  banner.textContent = `NOT LIVE — ${why}.${when}`;
}

// showParts swaps in the summary and the alerts the server rendered with
// the table's page (views.LockParts).
function showParts(parts) {
  for (const id of ['summary', 'alerts']) {
    const next = parts.getElementById(id);
    if (next) document.getElementById(id).replaceWith(next);
  }
  const pane = parts.querySelector('.node-details');
  if (pane) {
    details.replaceChildren(pane);
    startNodeClock(details, snap, timing);
    tick(details);
  }
  const sum = document.getElementById('summary');
  if (sum.dataset.title) document.title = sum.dataset.title;
  tick(sum);
}

// An alert marks the nodes it names (its title) while hovered or focused,
// and selects the first when clicked; the alerts are replaced with every
// change, so the page listens on the document.
function alertNodes(e) {
  const li = e.target.closest && e.target.closest('#alerts li.alert');
  return li && li.title ? li.title.split('\n') : null;
}
function markAlert(e, on) {
  for (const name of alertNodes(e) || []) {
    const g = svg.querySelector(`[data-node="${CSS.escape(name)}"]`);
    if (g) g.classList.toggle('hl', on);
  }
}
document.addEventListener('mouseover', (e) => markAlert(e, true));
document.addEventListener('mouseout', (e) => markAlert(e, false));
document.addEventListener('focusin', (e) => markAlert(e, true));
document.addEventListener('focusout', (e) => markAlert(e, false));
document.addEventListener('click', (e) => {
  const nodes = alertNodes(e);
  if (nodes) select(nodes[0]);
});

function render() {
  renderBanner();
  if (!snap) return;
  drawQueue(svg, snap, { selected, onSelect: select, timing, id: 'lane' });
  const folded = Number(svg.dataset.folded || 0);
  foldNote.hidden = !folded;
  foldNote.dataset.folded = String(folded);
  if (folded) {
    const extra = Number(svg.dataset.extra || 0);
    const capped = svg.dataset.capped === 'true';
    foldNote.textContent =
      `${folded.toLocaleString('en-US')} of ${(snap.nodes || []).length.toLocaleString('en-US')} nodes are folded into “…” groups. ` +
      `Drawn: the first ${HEAD} and the last ${TAIL}, and from the middle ${extra} holder${extra === 1 ? '' : 's'}, zombies, selected or alerted nodes` +
      (capped ? ` (at most ${MAX_EXTRA}: more are folded)` : '') +
      `. An alert names at most ${ALERT_NAMES} nodes, so nodes past that are not marked. The table below lists every node.`;
  } else {
    foldNote.textContent = '';
  }
  table.update(snap, timing, selected);
  tick(document.body);
  if (!body.dataset.firstDraw) {
    body.dataset.firstDraw = String(Math.round(performance.now()));
    performance.mark('queue-drawn');
  }
}

document.getElementById('copy').addEventListener('click', async (e) => {
  if (!snap) return;
  const btn = e.currentTarget;
  let text;
  try {
    const res = await fetch('/parts/lock-text?' + lockQuery(new URLSearchParams(), service, path));
    if (!res.ok) throw new Error(res.statusText);
    text = await res.text();
  } catch (err) {
    btn.textContent = `could not copy: ${err.message}`;
    setTimeout(() => (btn.textContent = 'copy as text'), 2000);
    return;
  }
  try {
    await navigator.clipboard.writeText(text);
    btn.textContent = 'copied ✓';
  } catch {
    // Without clipboard access (plain http on another host), show it to copy by hand.
    const out = document.getElementById('copy-out');
    out.value = text;
    out.hidden = false;
    out.select();
    btn.textContent = 'select and copy ↓';
  }
  setTimeout(() => (btn.textContent = 'copy as text'), 2000);
});

// follow opens the socket, once the server watches the path: a socket for
// an unwatched path would only be refused (404), again and again.
function follow() {
  live = new LiveLock(path, {
    service,
    onSnapshot(s) {
      snap = s;
      const now = Date.now();
      timing.observe(s, now);
      if (s.connection === 'connected' && !s.error) lastLiveAt = now;
      render();
    },
    onStatus(st) {
      socket = st;
      if (st.socket === 'open' && snap && snap.connection === 'connected') lastLiveAt = Date.now();
      renderBanner();
    },
  }).start();
  renderBanner();
}
if (body.dataset.watched !== 'false') follow();
else renderBanner();

const watchThis = document.getElementById('watch-this');
if (watchThis) {
  watchThis.addEventListener('click', async () => {
    watchThis.disabled = true;
    try {
      const res = await fetch('/api/v1/watch', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(service && service !== 'zookeeper' ? { service, path } : { path }),
      });
      const answer = await res.json().catch(() => ({}));
      if (!res.ok) throw new Error(answer.error || `${res.status} ${res.statusText}`);
      watchThis.closest('.card').replaceChildren(Object.assign(document.createElement('p'), { textContent: `Watching ${path}.` }));
      body.dataset.watched = 'true';
      follow();
    } catch (err) {
      watchThis.disabled = false;
      watchThis.insertAdjacentText('afterend', ` Could not watch: ${err.message}`);
    }
  });
}

window.addEventListener('pagehide', () => live && live.close());
setInterval(() => {
  tick(document.body);
  if (isLive()) lastLiveAt = Date.now();
}, 1000);
