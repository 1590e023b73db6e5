// lock.js runs the lock view: one live queue, its alerts, a detail pane and
// the table, with a banner whenever what is shown is not live.

import { drawQueue, drawLocks, tick, legend, say, COL } from './queue.js';

import { LiveLock, lockQuery } from './live.js';
import { QueueTable } from './table.js';
import { when } from './timeline.js';
import { TimeBar } from './timebar.js';
import { morph } from './morph.js';

const body = document.body;
const path = body.dataset.path;
// query names the lock in every URL and in the watch request
// (views.LockQuery).
const query = body.dataset.lockQuery || '';
const svg = document.getElementById('lane');
const banner = document.getElementById('banner');
const details = document.getElementById('details');
const foldNote = document.getElementById('fold-note');
let snap = null;
let socket = { socket: 'connecting', attempt: 0 };
let selected = new URLSearchParams(location.search).get('node') || '';
let lastLiveAt = null;
let live = null; // the LiveLock, once the path is watched
// at is the past moment shown (ms epoch), null when live; liveSnap the
// newest live snapshot, kept while a past moment is shown.
let at = body.dataset.at ? Number(body.dataset.at) : null;
let liveSnap = null;
// liveChanged is told of every live snapshot (the time bar's figures
// follow them); nothing without a time bar.
let liveChanged = () => {};
// historyOff says whether the server says the history is off (the page's
// data-history-off, then each frame's historyOff): its reads are refused
// then (503), so the time bar, the strip and the figures do not ask until
// it records again, when historyBack has them ask again.
const historyOff = () => !!body.dataset.historyOff;
let historyBack = () => {};
// liveScene is the deadlock through other locks this lock is in, as the
// newest frame with the parts brought it (web/scene.go), null when none.
let liveScene = null;
const sceneCard = document.getElementById('scene');
const sceneSvg = sceneCard.querySelector('svg.locks');

legend(document.getElementById('legend'));
// withMoment, while a scrub asks the table for its page, fetches that page
// inside the moment's answer (seek).
let withMoment = null;
// The table's pages are the server's, and come with the summary and the
// alerts of the same snapshot: live, in the socket's frames; at a past
// moment, in the moment's answer (source).
const table = new QueueTable(document.getElementById('table'), {
  onSelect: select,
  source: (q) => {
    if (at !== null) q.set('at', String(at));
    if (withMoment) return withMoment(q);
    return fetch('/parts/lock?' + lockQuery(q, query));
  },
  onParts: showParts,
  onPage: () => followWindow(),
  // Live, a page turned, a filter or a node shown is the socket's to
  // bring: it moves to that view, and its first frame has every part.
  viaSocket: () => at === null,
  onQuery: () => followWindow(),
});

// liveSections are the live parts the socket has brought, by section: its
// frames bring the sections that changed, and Live shows them all again
// after a past moment.
const liveSections = new Map();
function keepLive(html) {
  const tpl = document.createElement('template');
  tpl.innerHTML = html;
  for (const el of tpl.content.children) liveSections.set(el.id || el.classList[0] || el.tagName, el.outerHTML);
}
const liveParts = () => [...liveSections.values()].join('');

// A long queue comes over the socket as the part of it the page shows (the
// server's web/window.go): the lane's head and tail, the holders, the
// selected node and the table's page. viewWindow is that part; when the
// table turns a page or another node is selected, the socket moves to it.
// A filtered table's pages are of the rows that match, not of the queue:
// the window stays where it was. Every frame brings the parts of the
// table's page (and filter) with it, so a change costs no request.
let windowFrom = 0;
function viewWindow() {
  // While the table shows the selected node's page, the server finds
  // that page (show): the lane draws the node wherever it is.
  const show = !!table.showName;
  if (!table.filter && !show) windowFrom = Math.max(0, table.page) * table.pageSize;
  return { from: windowFrom, size: table.pageSize, node: selected, parts: true, page: show ? 0 : Math.max(0, table.page), q: table.filter, show };
}
function followWindow() {
  if (live) live.setWindow(viewWindow());
}

// setParam names v as the page's ?k= in its address ('' drops it), so a
// reload or a link shows the same.
function setParam(k, v) {
  const u = new URL(location.href);
  if (v) u.searchParams.set(k, v);
  else u.searchParams.delete(k);
  history.replaceState(null, '', u);
}

function select(name) {
  selected = name === selected ? '' : name;
  setParam('node', selected);
  render();
  if (selected) table.show(selected);
  else table.showName = '';
  followWindow();
}

// said is the server's banner for the newest parts (views.NewLock): whether
// the lock shown is live and, when not, why, in its service's words.
let said = { live: banner.dataset.live === 'true', text: banner.textContent };

function isLive() {
  return socket.socket === 'open' && said.live;
}

// renderBanner shows the server's banner, or while the page's own socket
// is down the server's words for that (the first paint's data-*).
function renderBanner() {
  if (at !== null) {
    // A past moment: the replay status (the server's) says which.
    body.dataset.live = 'false';
    banner.hidden = true;
    return;
  }
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
  const words = banner.dataset;
  let text = said.text;
  if (socket.socket !== 'open') {
    // A page drawn from its first frame (a long queue's) is still
    // connecting, not lost, until its socket first opens.
    const connecting = !snap || (socket.socket === 'connecting' && !socket.attempt);
    text = connecting ? words.connecting : socket.attempt ? words.retry.replace('{attempt}', socket.attempt) : words.lost;
  }
  if (text && lastLiveAt && words.seen) text += words.seen.replace('{time}', when(lastLiveAt));
  banner.hidden = now || !text;
  banner.textContent = now ? '' : text || '';
}

// showParts swaps in the summary and the alerts the server rendered with
// the table's page (views.LockParts).
function showParts(parts) {
  const b = parts.getElementById('banner');
  if (b) {
    said = { live: b.dataset.live === 'true', text: b.textContent };
    // The words for the page's own states come with the parts, so a page
    // that began to watch has them too.
    for (const k of ['connecting', 'lost', 'retry', 'seen']) if (b.dataset[k]) banner.dataset[k] = b.dataset[k];
    if (said.live) lastLiveAt = Date.now();
    renderBanner();
  }
  for (const id of ['summary', 'alerts', 'replay-status']) {
    const next = parts.getElementById(id);
    if (next) document.getElementById(id).replaceWith(next);
  }
  const pane = parts.querySelector('.node-details');
  if (pane) {
    // Its clock is the server's (views.ClockOf), as the lane's is.
    details.replaceChildren(pane);
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

// drawLane draws the lane aside and morphs the page's into it: a past
// moment is redrawn on every step of a scrub, and most of the queue's
// nodes are the same between two moments. A past moment's lane is drawn
// only near the part in view (nearView) until the moments stop coming:
// when one node leaves a queue every column behind it moves, and the
// browser would build, lay out and paint all of them each frame.
function drawLane(whole = false) {
  const next = svg.cloneNode(false);
  // The lane's clocks stop at the moment shown (data-clock-at), which
  // drawQueue's tick looks for above the lane.
  const aside = document.createElement('div');
  if (body.dataset.clockAt) aside.dataset.clockAt = body.dataset.clockAt;
  aside.append(next);
  const keep = !whole && at !== null ? nearView() : undefined;
  // The node with the keyboard's focus stays, wherever it is, or the
  // morph would drop the focus with it.
  const focused = svg.contains(document.activeElement) ? document.activeElement.getAttribute('data-node') : null;
  drawQueue(next, snap, { selected, onSelect: select, id: 'lane', keep, focused, onFold: (from) => table.go(Math.floor(from / table.pageSize)) });
  clearTimeout(laneRest);
  laneCulled = Number(next.dataset.culled) > 0;
  // Once the scrub rests, the whole lane: find-in-page, the alerts'
  // highlights and the tests see every node.
  if (laneCulled) laneRest = setTimeout(() => redrawLane(true), LANE_REST_MS);
  morph(svg, next);
}

// LANE_REST_MS is how long a culled lane waits for the next moment before
// it is drawn whole: longer than a scrub frame, short enough not to be seen.
const LANE_REST_MS = 200;
let laneCulled = false;
let laneRest = 0;

function redrawLane(whole) {
  if (snap) drawLane(whole);
}
// A culled lane scrolled is drawn again around what comes into view.
svg.parentElement.addEventListener('scroll', () => laneCulled && redrawLane(false), { passive: true });

// nearView says, by a column's centre x, whether it lies within half a view
// left or right of what the lane's scroller shows; undefined (draw all)
// when the scroller has no width yet.
function nearView() {
  const view = svg.parentElement;
  const w = view ? view.clientWidth : 0;
  if (!w) return undefined;
  const from = view.scrollLeft - w / 2 - COL;
  const to = view.scrollLeft + w + w / 2 + COL;
  return (x) => x >= from && x <= to;
}

// drawScene draws the deadlock's locks side by side, each titled with a
// link to its page, and the cycle across them: the classroom's drawing,
// from what the frame brought. Live only: a past moment has no scene.
function drawScene() {
  const sc = at === null ? liveScene : null;
  sceneCard.hidden = !sc;
  if (!sc) {
    sceneSvg.replaceChildren();
    return;
  }
  drawLocks(sceneSvg, sc.locks, sc.cycle, { id: 'scene', href: (_, i) => sc.hrefs[i] });
}

// render draws snap; pending is the table's page for it, if already asked;
// framed, the parts a live frame brought with snap (null if none: the
// table is not asked again for a live snapshot).
function render(pending = null, framed = undefined) {
  renderBanner();
  if (!snap) return;
  drawLane();
  drawScene();
  const folded = Number(svg.dataset.folded || 0);
  foldNote.hidden = !folded;
  foldNote.dataset.folded = String(folded);
  // The server says what is drawn and folded (views.FoldNote).
  foldNote.textContent = folded && snap.window ? snap.window.note || '' : '';
  // The table's clocks are the server's (views.ClockOf), as the lane's are.
  if (framed === undefined) table.update(snap, selected, pending);
  else table.framed(snap, selected, framed);
  if (!body.dataset.firstDraw) {
    body.dataset.firstDraw = String(Math.round(performance.now()));
    performance.mark('queue-drawn');
  }
}

document.getElementById('copy').addEventListener('click', async (e) => {
  if (!snap) return;
  const btn = e.currentTarget;
  try {
    const q = new URLSearchParams();
    if (at !== null) q.set('at', String(at));
    const res = await fetch('/parts/lock-text?' + lockQuery(q, query));
    if (!res.ok) throw new Error(res.statusText);
    const text = await res.text();
    try {
      await navigator.clipboard.writeText(text);
      btn.textContent = say('page.copied');
    } catch {
      // Without clipboard access (plain http on another host), show it to copy by hand.
      const out = document.getElementById('copy-out');
      out.value = text;
      out.hidden = false;
      out.select();
      btn.textContent = say('page.copyByHand');
    }
  } catch (err) {
    btn.textContent = say('page.copyFailed', { why: err.message });
  }
  setTimeout(() => (btn.textContent = say('page.copy')), 2000);
});

// follow opens the socket, once the server watches the path: a socket for
// an unwatched path would only be refused (404), again and again.
function follow() {
  live = new LiveLock(path, {
    query,
    window: viewWindow(),
    onSnapshot: showLive,
    onStatus(st) {
      socket = st;
      if (isLive()) lastLiveAt = Date.now();
      renderBanner();
    },
  }).start();
  renderBanner();
}
// showLive shows s, the lock's newest state, and the parts its frame msg
// brought with it.
function showLive(s, msg = {}) {
  // A frame with the parts says whether the history records.
  if (msg.parts !== undefined) {
    body.dataset.historyOff = msg.historyOff || '';
    keepLive(msg.parts);
    liveScene = msg.scene || null;
  }
  liveSnap = s;
  liveChanged();
  if (at !== null) return; // a past moment is shown; Live comes back to this
  snap = s;
  render(null, msg.parts || null);
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
        body: JSON.stringify(Object.fromEntries(new URLSearchParams(query))),
      });
      const answer = await res.json().catch(() => ({}));
      if (!res.ok) throw new Error(answer.error || `${res.status} ${res.statusText}`);
      watchThis.closest('.card').replaceChildren(Object.assign(document.createElement('p'), { textContent: say('page.watching', { path }) }));
      body.dataset.watched = 'true';
      follow();
    } catch (err) {
      watchThis.disabled = false;
      watchThis.insertAdjacentText('afterend', say('page.watchFailed', { why: err.message }));
    }
  });
}

window.addEventListener('pagehide', () => live && live.close());
// The server says when the history records again (a frame with the parts
// says historyOff); the figures, the time bar and the strip then ask again.
let historyWasOff = historyOff();
setInterval(() => {
  tick(document.body);
  if (isLive()) lastLiveAt = Date.now();
  const off = historyOff();
  if (historyWasOff && !off) historyBack();
  historyWasOff = off;
}, 1000);

// The time bar (timebar.js) shows the lock as it was: it sets at, and has
// the page draw the moment it fetched, or the newest live snapshot again.
const bar = document.getElementById('timebar');
if (bar) {
  const timeBar = new TimeBar(bar, {
    query,
    path,
    table,
    historyOff,
    setParam,
    get at() {
      return at;
    },
    set at(v) {
      at = v;
    },
    selected: () => selected,
    set withMoment(f) {
      withMoment = f;
    },
    draw(next, page) {
      snap = next;
      render(page);
    },
    drawLive() {
      snap = liveSnap;
      render(null, liveSections.size ? liveParts() : undefined);
    },
  });
  liveChanged = () => timeBar.liveChanged();
  historyBack = () => timeBar.historyBack();
}

// A long queue's first window comes with the page (the socket's first
// message, made by the server from the snapshot the page shows): it is
// drawn now, with the rest of the page set up, while the socket connects;
// the socket then brings the newest.
const firstFrame = document.getElementById('first-frame');
const firstMsg = firstFrame && live && at === null && !snap ? JSON.parse(firstFrame.textContent) : null;
if (firstMsg && firstMsg.type === 'snapshot' && firstMsg.snapshot) {
  const s = firstMsg.snapshot;
  s.nodes = s.nodes || [];
  if (firstMsg.window) s.window = firstMsg.window;
  showLive(s, firstMsg);
}
