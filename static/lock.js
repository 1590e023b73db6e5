// lock.js runs the lock view: one live queue, its alerts, a detail pane and
// the table, with a banner whenever what is shown is not live.

import { drawQueue, drawLocks, Timing, tick, legend, pastTiming, knowNames, say, COL } from './queue.js';

import { LiveLock, lockQuery } from './live.js';
import { QueueTable, startNodeClock } from './table.js';
import { Timeline, timelineKeys, when, drawAxis, hoverTime, dragSpan, axisTimeAt } from './timeline.js';
import { Strip } from './strip.js';
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
const timing = new Timing();
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
    details.replaceChildren(pane);
    startNodeClock(details, snap, at !== null ? pastClock : timing);
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
function drawLane(clock, whole = false) {
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
  drawQueue(next, snap, { selected, onSelect: select, timing: clock, id: 'lane', keep, focused, onFold: (from) => table.go(Math.floor(from / table.pageSize)) });
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
  if (snap) drawLane(at !== null ? pastClock : timing, whole);
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
function drawScene(clock) {
  const sc = at === null ? liveScene : null;
  sceneCard.hidden = !sc;
  if (!sc) {
    sceneSvg.replaceChildren();
    return;
  }
  knowNames(sc.names);
  drawLocks(sceneSvg, sc.locks, sc.cycle, { id: 'scene', timing: clock, href: (_, i) => sc.hrefs[i] });
}

// render draws snap; pending is the table's page for it, if already asked;
// framed, the parts a live frame brought with snap (null if none: the
// table is not asked again for a live snapshot).
function render(pending = null, framed = undefined) {
  renderBanner();
  if (!snap) return;
  const clock = at !== null ? pastClock : timing;
  drawLane(clock);
  drawScene(clock);
  const folded = Number(svg.dataset.folded || 0);
  foldNote.hidden = !folded;
  foldNote.dataset.folded = String(folded);
  // The server says what is drawn and folded (views.FoldNote).
  foldNote.textContent = folded && snap.window ? snap.window.note || '' : '';
  if (framed === undefined) table.update(snap, clock, selected, pending);
  else table.framed(snap, clock, selected, framed);
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
// showLive shows s, the lock's newest state, and what its frame msg
// brought with it: the lane's labels and the parts.
function showLive(s, msg = {}) {
  knowNames(msg.names);
  // A frame with the parts says whether the history records.
  if (msg.parts !== undefined) {
    body.dataset.historyOff = msg.historyOff || '';
    keepLive(msg.parts);
    liveScene = msg.scene || null;
  }
  liveSnap = s;
  const now = Date.now();
  timing.observe(s, now);
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

// ---- The time bar: the lock as it was -----------------------------------
// The history's events of the window mark the bar (timeline.js, the
// classroom's timeline); picking a moment shows the lock as the history
// rebuilds it then (GET /parts/lock-at: the snapshot GET /api/v1/lock?at=
// answers) with the server's parts for it.

// pastClock times a past moment's nodes from the snapshot the history
// rebuilt: when each began to hold (heldSince) or queued (ctime), the clock
// stopped at the moment (data-clock-at).
const pastClock = pastTiming(() => at);

const bar = document.getElementById('timebar');
if (bar) {
  const ui = {
    back: document.getElementById('tb-back'), play: document.getElementById('tb-play'), step: document.getElementById('tb-step'),
    live: document.getElementById('tb-live'), win: document.getElementById('tb-window'), info: document.getElementById('tb-info'),
    exp: document.getElementById('export'), zoomOut: document.getElementById('tb-zoom-out'),
  };
  // A drag moves the bar many times a frame: its moves are taken once a
  // frame, the newest winning (and seek keeps one request under way).
  let scrubTo = null;
  function scrub(t) {
    if (scrubTo === null) {
      requestAnimationFrame(() => {
        const v = Math.round(scrubTo);
        scrubTo = null;
        if (v !== at) seek(v);
      });
    }
    scrubTo = t;
  }
  const timeline = new Timeline(document.getElementById('tb-scrub'), document.getElementById('tb-ticks'), { onSeek: (t) => seek(t), onScrub: scrub });
  // The strip chart over the bar picks moments as the bar does.
  const strip = new Strip(document.getElementById('strip-chart'), document.getElementById('strip-scale'), { onSeek: (t) => seek(t), onScrub: scrub });
  const STRIP_BUCKETS = 120;
  let win = { from: 0, to: 0 };
  // The bar's time axis, and the time under the pointer over the bar and
  // the strip; both follow the zone the reader picked.
  const axis = document.getElementById('tb-axis');
  const drawBarAxis = () => win.to > win.from && drawAxis(axis, win.from, win.to);
  hoverTime(timeline.input, document.getElementById('tb-hover'), (x) => timeline.valueAt(x));
  hoverTime(strip.svg, document.getElementById('strip-hover'), (x) => (strip.to > strip.from ? strip.timeAt(x) : null));
  new MutationObserver(() => {
    drawBarAxis();
    strip.redraw();
  }).observe(document.documentElement, { attributes: true, attributeFilter: ['data-timezone'] });
  // The window is known to the bar as a density, from the server: how many
  // moments lie in each of BUCKETS equal stretches. Its moments are listed
  // a page at a time: whole buckets around the moment shown, at most about
  // PAGE moments, so a day of changes (past what one answer of the history
  // lists) is as quick to open and move through as an hour.
  const BUCKETS = 600;
  const PAGE = 2000;
  const MARKS = 400; // a page with more moments shows the density alone
  let counts = [];
  let total = 0;
  let first = null;
  let last = null;
  // seen: the lock's first sight when it is in the window (the read that
  // began its history): no moment, as it restates what was there, but
  // where the history starts, so Home and ← reach it.
  let seen = null;
  let gaps = [];
  // page: the buckets listed, [from, to) in ms (to past the window's end
  // when it has the last bucket), and how many moments come before it.
  let page = null;
  let pageLoad = null; // the page being fetched, with done: its promise
  let moments = []; // the distinct times of the page's events, ms, ascending
  let playing = null;
  // zoom is the span (ms) a drag across the times zoomed the bar to, null
  // for the window picked: the bar, the strip and the figures cover it
  // until zoomed out, Live or another window.
  let zoom = null;

  // load reads the window's density around the moment shown (or up to
  // now) and lists the page of that moment.
  async function load() {
    if (historyOff()) return;
    const span = Number(ui.win.value);
    const now = Date.now();
    const to = zoom ? zoom.to : at === null ? now : Math.min(now, at + span / 2);
    const from = zoom ? zoom.from : to - span;
    const q = new URLSearchParams({ from: String(from), to: String(to), buckets: String(BUCKETS) });
    const qs = new URLSearchParams({ from: String(from), to: String(to), n: String(STRIP_BUCKETS) });
    // Live, the bar starts where the lock's history does when that is
    // inside the window (the server says where: the density's from).
    if (at === null && !zoom) for (const p of [q, qs]) p.set('fit', 'history');
    const stripRes = fetch('/api/v1/lock/strip?' + lockQuery(qs, query))
      .then((r) => (r.ok ? r.json() : null))
      .catch(() => null);
    const res = await fetch('/api/v1/lock/history/density?' + lockQuery(q, query));
    if (!res.ok) {
      ui.info.textContent = say('bar.noHistory', { status: `${res.status} ${res.statusText}` });
      return;
    }
    const d = await res.json();
    win = { from: Date.parse(d.from) || from, to };
    counts = d.counts || [];
    total = d.moments || 0;
    first = d.first ? Date.parse(d.first) : null;
    last = d.last ? Date.parse(d.last) : null;
    seen = d.seen ? Date.parse(d.seen) : null;
    gaps = (d.gaps || []).map((g) => ({ from: Date.parse(g.from), to: Date.parse(g.to), title: say('bar.gap', { from: when(Date.parse(g.from)), to: when(Date.parse(g.to)), why: g.why || say('bar.gapWhy') }) }));
    timeline.set({ min: win.from, max: to, value: at === null ? to : at, text: at === null ? 'live' : when(at) });
    timeline.density(counts);
    drawBarAxis();
    strip.draw(await stripRes);
    page = null;
    pageLoad = null;
    moments = [];
    await ensurePage(here());
    bar.dataset.moments = String(total);
    bar.dataset.gaps = String(gaps.length);
    bar.dataset.span = String(span);
    bar.dataset.zoom = zoom ? `${zoom.from}-${zoom.to}` : '';
    ui.zoomOut.hidden = !zoom;
    const q2 = new URLSearchParams({ from: String(from), to: String(to) });
    ui.exp.href = '/api/v1/lock/export?' + lockQuery(q2, query);
    syncBar();
  }

  // Bucket i holds the moments t with floor((t - from) * buckets / span)
  // = i, as the server counts them.
  const spanOf = () => Math.max(1, win.to - win.from);
  const bucketOf = (t) => Math.min(counts.length - 1, Math.max(0, Math.floor(((t - win.from) * counts.length) / spanOf())));
  const bucketStart = (i) => (i >= counts.length ? win.to + 1 : win.from + Math.ceil((i * spanOf()) / counts.length));
  const covers = (p, t) => p !== null && t >= p.from && t < p.to;

  // momentText tells a moment's changes: each kind with its count, then
  // the nodes they name (the first few, and how many more).
  function momentText(m) {
    const kinds = m.kinds.map((k) => (k.count > 1 ? say('bar.kindCount', { kind: k.kind, count: k.count.toLocaleString('en-US') }) : k.kind)).join(', ');
    const nodes = m.nodes || [];
    if (!nodes.length) return kinds;
    return say('bar.kindsNodes', { kinds, nodes: nodes.join(', '), more: m.changes > nodes.length ? say('bar.more') : '' });
  }

  // ensurePage lists the page around t, unless it is listed or on its way;
  // the newest page asked for wins.
  function ensurePage(t) {
    if (!counts.length || covers(page, t) || historyOff()) return Promise.resolve();
    if (covers(pageLoad, t)) return pageLoad.done;
    let i = bucketOf(t);
    let j = i + 1;
    let sum = counts[i];
    for (let grew = true; grew; ) {
      grew = false;
      if (i > 0 && sum + counts[i - 1] <= PAGE) {
        sum += counts[--i];
        grew = true;
      }
      if (j < counts.length && sum + counts[j] <= PAGE) {
        sum += counts[j++];
        grew = true;
      }
    }
    const p = { from: bucketStart(i), to: bucketStart(j), before: counts.slice(0, i).reduce((a, b) => a + b, 0) };
    pageLoad = p;
    p.done = (async () => {
      // The page's moments, each told in counts and a few names: a moment
      // of 100,000 changes (a big queue's watch table read once) is not
      // 100,000 events to fetch and parse.
      const q = new URLSearchParams({ from: String(p.from), to: String(Math.min(p.to - 1, win.to)) });
      const res = await fetch('/api/v1/lock/history/moments?' + lockQuery(q, query));
      const h = res.ok ? await res.json() : null;
      if (pageLoad !== p) return;
      if (!h) {
        pageLoad = null; // asked again at the next move
        return;
      }
      pageLoad = null;
      page = p;
      const listed = h.moments || [];
      moments = listed.map((m) => Date.parse(m.time));
      const marks = (
        moments.length > MARKS
          ? []
          : listed.map((m, i) => {
              const t = moments[i];
              return {
                value: t,
                cls: 'k-' + String(m.kinds[0].kind).replace(/[^a-z]/g, '') + (t === at ? ' current' : ''),
                title: say('bar.moment', { at: when(t), changes: momentText(m) }),
                data: { at: String(t) },
              };
            })
      ).concat(seen === null ? [] : [{ value: seen, cls: 'k-seen' + (seen === at ? ' current' : ''), title: say('bar.seenMark', { at: when(seen) }), data: { seen: String(seen) } }]);
      timeline.draw(marks, gaps);
      bar.dataset.page = `${p.from}-${p.to}`;
      syncBar();
    })();
    return p.done;
  }

  function syncBar() {
    bar.dataset.at = at === null ? '' : String(at);
    body.dataset.at = bar.dataset.at;
    if (at === null) delete body.dataset.clockAt;
    else body.dataset.clockAt = String(at);
    ui.live.setAttribute('aria-pressed', String(at === null));
    ui.play.textContent = playing ? '❚❚ pause' : '▶ play';
    if (at === null) ui.info.textContent = say('bar.live', { total });
    else if (at === seen && countTo(at) === 0) ui.info.textContent = say('bar.seen', { at: when(at), total });
    else ui.info.textContent = say('bar.at', { at: when(at), n: countTo(at), total });
    timeline.input.value = String(at === null ? win.to : at);
    timeline.current(at);
    strip.cursor(at);
    if (at !== null) ensurePage(at);
  }

  // seek shows the lock as it was at t. While a drag moves the bar faster
  // than the server answers, one request is under way at a time and the
  // newest moment is fetched when it is answered. The address names the
  // moment once its request is on its way: replacing it costs the browser
  // milliseconds the request need not wait for.
  let fetching = false;
  function seek(t) {
    at = Math.round(t);
    syncBar();
    const drawn = fetching ? Promise.resolve() : fetchAndDraw();
    setParam('at', String(at));
    return drawn;
  }

  // fetchAndDraw fetches and draws the moment shown, again while a newer
  // one came meanwhile.
  async function fetchAndDraw() {
    fetching = true;
    try {
      let want;
      do {
        want = at;
        // The moment's table (and the parts with it) comes in one answer
        // with its snapshot (GET /parts/lock-at?parts=1): one request a
        // frame, and the server rebuilds the moment once.
        let moment = null;
        withMoment = (q) => {
          q.set('parts', '1');
          moment = fetchMoment(q);
          return moment.then((m) => new Response(m.html, { status: m.status, statusText: m.statusText, headers: { 'Content-Type': 'text/html; charset=utf-8' } }));
        };
        let page;
        try {
          page = table.request(selected);
        } finally {
          withMoment = null;
        }
        const m = await (moment || fetchMoment(new URLSearchParams({ at: String(want), parts: '1' })));
        knowNames(m.names);
        const next = m.snap || { path, nodes: [], alerts: [], connection: '' };
        // Drawn together, the lane and the table cost the browser one
        // style, layout and paint, not one each: the table's text is
        // awaited too, or the table would be patched a task later, after
        // a frame of the lane alone.
        await page.res.then((r) => r.text()).catch(() => {});
        if (at === null) return; // Live came meanwhile
        if (at !== want) continue;
        snap = next;
        render(page);
      } while (at !== null && at !== want);
    } finally {
      fetching = false;
    }
  }

  // fetchMoment is the lock at a past moment with its parts (GET
  // /parts/lock-at?parts=1): snap, null when the server has none to give,
  // and the answer's HTML, the parts after the snapshot's JSON element.
  async function fetchMoment(q) {
    const res = await fetch('/parts/lock-at?' + lockQuery(q, query));
    const html = res.ok ? await res.text() : '';
    const open = html.indexOf('>') + 1;
    const end = html.indexOf('</script>');
    const answer = res.ok && end > open ? JSON.parse(html.slice(open, end)) : {};
    const snap = answer.snapshot || null;
    // A long queue's moment comes as the window its lane draws.
    if (snap && answer.window) snap.window = answer.window;
    return { snap, names: answer.names, html, status: res.status, statusText: res.statusText };
  }

  function goLive() {
    stop();
    at = null;
    zoom = null;
    setParam('at', '');
    snap = liveSnap;
    syncBar();
    render(null, liveSections.size ? liveParts() : undefined);
    load();
  }

  // below is how many of the page's moments are before t (or at it, with
  // at set).
  function below(t, orAt = false) {
    let lo = 0;
    let hi = moments.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (moments[mid] < t || (orAt && moments[mid] === t)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  // countTo is how many of the window's moments are at or before t: exact
  // on the listed page, to the bucket until t's page is listed.
  function countTo(t) {
    if (covers(page, t)) return page.before + below(t, true);
    return counts.slice(0, bucketOf(t) + 1).reduce((a, b) => a + b, 0);
  }

  const here = () => (at === null ? win.to : at);

  // nearMoment is the window's first moment after t (dir 1) or its last
  // before t (dir -1), listing the pages on the way (empty buckets are
  // skipped by the density).
  async function nearMoment(t, dir) {
    await ensurePage(t);
    for (;;) {
      const k = dir > 0 ? below(t, true) : below(t) - 1;
      if (k >= 0 && k < moments.length) return moments[k];
      if (page === null || (dir > 0 ? page.to > win.to : page.from <= win.from)) return undefined;
      let b = bucketOf(dir > 0 ? page.to : page.from - 1);
      while (b >= 0 && b < counts.length && !counts[b]) b += dir;
      if (b < 0 || b >= counts.length) return undefined;
      const was = page;
      await ensurePage(bucketStart(b));
      if (page === was) return undefined;
    }
  }

  async function stepFwd() {
    const t = await nearMoment(here(), 1);
    if (t !== undefined) seek(t);
    else goLive();
  }
  // Before the window's first moment, ← goes to the first sight.
  async function stepBack() {
    const t = await nearMoment(here(), -1);
    if (t !== undefined) seek(t);
    else if (seen !== null && seen < here()) seek(seen);
  }
  function stop() {
    clearInterval(playing);
    playing = null;
  }
  ui.play.addEventListener('click', () => {
    if (playing) {
      stop();
    } else {
      playing = setInterval(stepFwd, 1000);
    }
    syncBar();
  });
  ui.back.addEventListener('click', stepBack);
  ui.step.addEventListener('click', stepFwd);
  ui.live.addEventListener('click', goLive);
  // showFigures replaces the figures with the server's for [from, to];
  // always: even while the summary says the history is off (its figures
  // are still read, and the part says when they cannot be).
  async function showFigures(from, to, always = false) {
    if (!always && historyOff()) return;
    const q = new URLSearchParams({ from: String(from), to: String(to) });
    // The cluster the page was opened on, if it names one (a lock recorded
    // on more than one).
    const cluster = new URLSearchParams(location.search).get('cluster');
    if (cluster) q.set('cluster', cluster);
    const res = await fetch('/parts/lock-figures?' + lockQuery(q, query));
    if (res.ok) {
      const tpl = document.createElement('template');
      tpl.innerHTML = await res.text();
      const f = tpl.content.getElementById('figures');
      const shown = document.getElementById('figures');
      // A page first painted while the history could not be read has no
      // figures: they come after the time bar, where the server puts them.
      if (f && shown) shown.replaceWith(f);
      else if (f) bar.after(f);
    }
  }
  // A zoom spans MIN_ZOOM ms at least, widened about its middle:
  // narrower, the axis would have no second to mark.
  const MIN_ZOOM = 1000;
  // A drag across the times under the bar zooms the bar, the strip and
  // the figures to the span; double-click, the zoom out button or Z go
  // back to the window picked.
  async function zoomTo(span) {
    if (span && span.to - span.from < MIN_ZOOM) {
      const mid = Math.round((span.from + span.to) / 2);
      span = { from: mid - MIN_ZOOM / 2, to: mid + MIN_ZOOM / 2 };
    }
    zoom = span;
    await load();
    await showFigures(win.from, win.to);
  }
  const zoomBack = () => zoom && zoomTo(null);
  dragSpan(axis, document.getElementById('tb-zoom-band'), (from, to) => zoomTo({ from, to }));
  // The time under the pointer over the times too, where a drag begins and ends.
  hoverTime(axis, document.getElementById('tb-hover'), (x) => axisTimeAt(axis, x));
  axis.addEventListener('dblclick', zoomBack);
  ui.zoomOut.addEventListener('click', zoomBack);
  ui.win.addEventListener('change', () => zoomTo(null));
  // While live, the figures follow the changes on a timer, not per
  // change: every FIGURES_EVERY, the window up to now is read again if the
  // lock changed since the last read (the history has recorded what a
  // viewer has seen before it answers), so a busy lock with many viewers
  // costs each viewer one request every FIGURES_EVERY at most.
  const FIGURES_EVERY = 5000;
  let figuresStale = false;
  let figuresBusy = false;
  liveChanged = () => {
    figuresStale = true;
  };
  setInterval(async () => {
    if (!figuresStale || figuresBusy || at !== null || zoom || document.hidden || !document.getElementById('figures')) return;
    figuresStale = false;
    figuresBusy = true;
    try {
      const to = Date.now();
      await showFigures(to - Number(ui.win.value), to);
    } catch {
      figuresStale = true; // the next tick tries again
    } finally {
      figuresBusy = false;
    }
  }, FIGURES_EVERY);
  timelineKeys({
    back: stepBack, step: stepFwd, first: () => (seen ?? first) !== null && seek(seen ?? first), last: () => last !== null && seek(last),
    extra: { l: goLive, L: goLive, z: zoomBack, Z: zoomBack },
  });
  // The page comes with a place for its figures, not the figures: they
  // are read from the history once the queue is shown.
  const pendingFigures = document.querySelector('#figures[data-pending]');
  if (pendingFigures) {
    showFigures(Number(pendingFigures.dataset.from), Number(pendingFigures.dataset.to), true).catch(() => {
      // The next change, or the window's, fetches them again.
    });
  }
  // A moment the server could not read (the history's database gone) is
  // not asked for again (a 503) until the history records again: the
  // replay status says why.
  load().then(() => {
    if (at === null) return;
    const off = document.querySelector('#replay-status[data-off]');
    if (off) ui.info.textContent = say('bar.off', { at: when(at), off: off.dataset.off });
    else seek(at);
  });
  historyBack = () => {
    const loaded = load();
    const to = Date.now();
    if (at === null) showFigures(to - Number(ui.win.value), to);
    else loaded.then(() => seek(at));
  };
  // While live, the bar gains the changes recorded since.
  setInterval(() => {
    if (at === null && !playing && !document.hidden) load();
  }, 15000);
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
