// queue.js draws one lock queue as an SVG lane. The lock view and the
// classroom both use it, so a queue looks the same wherever it is shown.
//
// Layout, top to bottom: the lock parent as a bar (the target of children
// watches), the arcs each waiter's recipe says it waits for (solid, above the
// shapes), the nodes in queue order, the watches the server says each session
// really holds (dashed, below the shapes), then each node's labels.
//
// Stable hooks for tests and tooling: every node is <g data-node data-state>,
// every arrow carries data-from, data-to and data-kind="rule|actual".

const NS = 'http://www.w3.org/2000/svg';

export const COL = 128; // width of one node's column
export const GROUP_COL = 156;
export const PAD = 14; // room before the first column and after the last
const BAR_Y = 6;
const BAR_H = 22;
const BAND_TOP = 36;
const CY = 122; // shape centre
const R = 20;
const RULE_Y = CY - R - 5;
const ACT_Y = CY + R + 5;
const DEADLOCK_Y = CY + R + 15; // below a cycle ring (radius R + 12)
const LABEL_Y = 218;
const LINE = 16;
export const HEIGHT = LABEL_Y + 3 * LINE + 14;

// words are the server's words for the lane and the pages' scripts
// (views.Words and views' phrases, rendered into every page as
// #lane-words): mode labels, states, provenance and every sentence a
// script says. The browser words nothing of its own. They live here, not in
// a module of their own, because an incident file inlines this module as a
// data: URL, which can import nothing by a relative name.
let cachedWords = null;
function words() {
  if (!cachedWords) {
    const el = document.getElementById('lane-words');
    cachedWords = el ? JSON.parse(el.textContent) : { modes: [], stalled: '', partOf: '', provenance: {} };
  }
  return cachedWords;
}

// say words one of the server's phrases (views.lanePhrases, #lane-words'
// say) with vars: {x} is vars.x, {n|one|many} the word for a count of one
// or of any other.
export function say(key, vars = {}) {
  const t = (words().say || {})[key] ?? key;
  return t.replace(/\{(\w+)(?:\|([^|}]*)\|([^}]*))?\}/g, (_, k, one, many) => (one !== undefined ? (vars[k] === 1 ? one : many) : String(vars[k] ?? '')));
}

// modeWord is the server's words of a node mode (views.ModeWord): its
// label (views.ModeLabel) and its shape's letter.
function modeWord(mode) {
  const modes = words().modes;
  return modes.find((x) => x.mode === mode) || modes.find((x) => x.mode === 'unknown') || { label: mode, letter: '?' };
}

// modeLabel is the server's label of a node mode (views.ModeLabel).
export function modeLabel(mode) {
  return modeWord(mode).label;
}

export function clip(text, n) {
  if (text.length <= n) return text;
  return text.slice(0, n - 1) + '…';
}

// fmtDur formats a duration in ms the way a person reads a stopwatch, as
// views.Duration does on the server.
export function fmtDur(ms) {
  if (!(ms >= 0)) ms = 0;
  const s = ms / 1000;
  if (s < 10) return s.toFixed(1) + 's';
  if (s < 60) return Math.floor(s) + 's';
  const m = Math.floor(s / 60);
  if (m < 60) return m + 'm ' + String(Math.floor(s % 60)).padStart(2, '0') + 's';
  const h = Math.floor(m / 60);
  if (h < 48) return h + 'h ' + String(m % 60).padStart(2, '0') + 'm';
  return Math.floor(h / 24) + 'd ' + (h % 24) + 'h';
}

// provenance words who vouches for an edge (views.Provenance).
const provenance = (p) => words().provenance[p] || p;

// alertIndex maps node names to the alerts that name them.
function alertIndex(snap) {
  const idx = new Map();
  for (const a of snap.alerts || []) {
    for (const name of a.nodes || []) {
      if (!idx.has(name)) idx.set(name, []);
      idx.get(name).push(a);
    }
  }
  return idx;
}

// allColumns draws every node: a queue the server sent whole is short
// enough to draw whole (views.LaneAllUpTo); a longer one comes as a window
// of it (windowColumns), the nodes the server chose to draw.
function allColumns(nodes) {
  return Object.assign(nodes.map((node, i) => ({ node, index: i })), { extra: 0, capped: false });
}

// windowColumns draws a window of a long queue (snap.window, the server's
// web/window.go): the server chose the nodes to draw and sent the rest as
// folds with their counts.
function windowColumns(snap) {
  const w = snap.window;
  const nodes = snap.nodes || [];
  const runs = w.runs || [];
  const folds = w.folds || [];
  const out = [];
  let k = 0;
  for (let r = 0, f = 0; r < runs.length || f < folds.length; ) {
    if (f >= folds.length || (r < runs.length && runs[r][0] < folds[f][0])) {
      const [start, count] = runs[r++];
      for (let i = 0; i < count && k < nodes.length; i++) out.push({ node: nodes[k++], index: start + i });
    } else {
      const [from, to, holding] = folds[f];
      out.push({ group: true, from, to, count: to - from + 1, holding, notified: (w.notified || [])[f++] });
    }
  }
  out.extra = w.extra || 0;
  out.capped = !!w.capped;
  return out;
}

// count writes n with thousands separators. One formatter for every fold:
// toLocaleString makes one per call, a good part of drawing a long lane.
const counts = new Intl.NumberFormat('en-US');
const count = (n) => counts.format(n);

// el makes an SVG element with attrs (those null or undefined left out)
// and text.
export function el(tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// arrowHead is an arrow's head of kind (its class ah-kind), size px wide.
function arrowHead(id, kind, size) {
  const m = el('marker', {
    id, viewBox: '0 0 10 10', refX: 9, refY: 5, markerUnits: 'userSpaceOnUse',
    markerWidth: size, markerHeight: size, orient: 'auto-start-reverse', class: `ah ah-${kind}`,
  });
  m.append(el('path', { d: 'M0,0 L10,5 L0,10 z' }));
  return m;
}

function markers(prefix) {
  const defs = el('defs');
  for (const kind of ['rule', 'missing', 'confirmed', 'unexpected', 'dangling', 'unknown', 'children', 'deadlock', 'stalled', 'notify']) {
    defs.append(arrowHead(`${prefix}-ah-${kind}`, kind, 11));
  }
  return defs;
}

// shapePath is a node's shape (class shape) for its mode, r its radius.
function shapePath(mode, r) {
  switch (mode) {
    case 'read':
      return el('circle', { class: 'shape', r });
    case 'write': {
      const s = r * 0.9;
      return el('rect', { class: 'shape', x: -s, y: -s, width: 2 * s, height: 2 * s, rx: 2 });
    }
    case 'exclusive':
      return el('path', { class: 'shape', d: `M0,${-r * 1.2} L${r * 1.2},0 L0,${r * 1.2} L${-r * 1.2},0 z` });
    case 'lease': {
      const pts = [];
      for (let k = 0; k < 6; k++) {
        const a = Math.PI / 6 + (k * Math.PI) / 3;
        pts.push(`${(r * 1.1 * Math.cos(a)).toFixed(1)},${(r * 1.1 * Math.sin(a)).toFixed(1)}`);
      }
      return el('polygon', { class: 'shape', points: pts.join(' ') });
    }
    default:
      return el('path', { class: 'shape', d: `M0,${-r * 1.15} L${r * 1.1},${r * 0.85} L${-r * 1.1},${r * 0.85} z` });
  }
}

// arc returns a path from x1 to x2 bowing above (dir -1) or below (dir 1) y.
function arc(x1, x2, y, dir, maxH) {
  const dist = Math.abs(x2 - x1) / COL;
  const h = Math.min(maxH, 26 + 13 * Math.max(0, dist - 1)) * dir;
  return `M${x1},${y} C${x1},${y + h} ${x2},${y + h} ${x2},${y}`;
}

// drawQueue renders snap into svg (replacing its content) and returns the
// centre x of every drawn node, keyed by name, for animations.
//   opts.selected: name of the selected node
//   opts.onSelect(name): called when a node is clicked or chosen with Enter
//   opts.id: prefix for marker ids, unique per SVG on a page
export function drawQueue(svg, snap, opts = {}) {
  const lane = layLane(snap, opts);
  const { win, cols, width, total } = lane;
  svg.replaceChildren();
  svg.setAttribute('viewBox', `0 0 ${width} ${HEIGHT}`);
  svg.setAttribute('width', width);
  svg.setAttribute('height', HEIGHT);
  svg.setAttribute('data-revision', snap.revision ?? '');
  svg.setAttribute('data-count', total);
  if (win) svg.setAttribute('data-window', `${win.from}-${win.to}`);
  else svg.removeAttribute('data-window');
  svg.append(markers(lane.id));
  // Column bands: a node is its column.
  const bands = el('g', { class: 'bands' });
  for (const c of cols) {
    if (!lane.kept(c)) continue;
    const cls = c.group ? 'band group' : 'band' + (c.node.holding ? ' holding' : '') + (c.node.name === opts.selected ? ' selected' : '');
    bands.append(el('rect', { class: cls, x: c.x - c.w / 2 + 3, y: BAND_TOP, width: c.w - 6, height: HEIGHT - BAND_TOP - 4, rx: 8 }));
  }
  svg.append(bands);
  svg.append(parentBar(lane));
  const arrows = el('g', { class: 'arrows' });
  for (const c of cols) if (!c.group) ruleArrows(lane, c, arrows);
  for (const c of cols) if (!c.group) watchArrows(lane, c, arrows);
  svg.append(arrows);
  const layer = el('g', { class: 'nodes' });
  let drawn = 0;
  let culled = 0;
  for (const c of cols) {
    if (!c.group) drawn++;
    if (!lane.kept(c)) culled++;
    else if (c.group) layer.append(drawFold(c, opts));
    else layer.append(drawNode(c, snap, opts, lane.alerted.get(c.node.name), lane.deadlocked.has(c.node.name)));
  }
  svg.append(layer);
  svg.setAttribute('data-drawn', drawn);
  svg.setAttribute('data-culled', culled);
  svg.setAttribute('data-folded', total - drawn);
  svg.setAttribute('data-extra', cols.extra || 0);
  svg.setAttribute('data-capped', cols.capped ? 'true' : 'false');
  tick(svg);
  return lane.pos;
}

// layLane lays snap's lane out: its columns with their centre x (pos by
// node name), and what drawQueue's pieces share.
function layLane(snap, opts) {
  const nodes = snap.nodes || [];
  const win = snap.window || null;
  const cols = win ? windowColumns(snap) : allColumns(nodes);
  const deadlocked = new Set();
  for (const a of snap.alerts || []) if (a.kind === 'deadlock') for (const n of a.nodes || []) deadlocked.add(n);
  const pos = new Map(); // node name -> centre x
  let x = PAD;
  for (const c of cols) {
    c.w = c.group ? GROUP_COL : COL;
    c.x = x + c.w / 2;
    if (!c.group) pos.set(c.node.name, c.x);
    x += c.w;
  }
  // Only a window has folds: a node it did not send is drawn at the fold
  // that holds it, by its position.
  const xOf = (name) => {
    if (pos.has(name)) return pos.get(name);
    const at = win ? (win.targets || {})[name] : undefined;
    const g = at === undefined ? undefined : cols.find((c) => c.group && c.from <= at && at <= c.to);
    return g && g.x;
  };
  // opts.keep, when given, says by its centre x which columns to draw: a
  // scrub through past moments draws only those near the view (lock.js),
  // since one node leaving moves every column behind it. The selected and
  // focused nodes are always drawn; an arrow goes only when both its ends
  // do. data-culled counts the columns left out.
  const keepX = (x) => !opts.keep || (x !== undefined && opts.keep(x));
  const kept = (c) => keepX(c.x) || (!c.group && (c.node.name === opts.selected || c.node.name === opts.focused));
  // An arrow is drawn when its column is, or when its target is.
  const reach = (c, tx) => tx !== undefined && (kept(c) || keepX(tx));
  const id = opts.id || 'q';
  const total = win ? win.total : nodes.length;
  return { snap, id, win, cols, pos, xOf, kept, reach, deadlocked, alerted: alertIndex(snap), total, width: Math.max(x + PAD, 320) };
}

// parentBar is the lock parent: a bar as wide as the lane, saying what the
// lane cannot show (its state unknown, the lock missing, a herd), as the
// server says it (lockqueue.Parent).
function parentBar({ snap, width }) {
  const p = snap.parent || {};
  const childWatchers = p.childWatchers || 0;
  const parent = el('g', { class: 'parent' + (childWatchers ? ' herd' : ''), 'data-parent': snap.path, 'data-children-watchers': childWatchers });
  parent.append(el('rect', { x: PAD, y: BAR_Y, width: width - 2 * PAD, height: BAR_H, rx: 4 }));
  let text = snap.path || '';
  // Not live, the state shown is the last known one: an empty lane or a
  // missing lock is not news of a free one.
  if (p.is) text += say('parent.' + p.is, { n: p.n });
  // The bar is as wide as the lane: a short lane clips the text (about 7.3 px
  // a character in the 12 px monospace), with the whole in the tooltip.
  const fits = Math.max(12, Math.floor((width - 2 * PAD - 16) / 7.3));
  parent.append(el('text', { x: PAD + 8, y: BAR_Y + 15 }, clip(text, fits)));
  if (childWatchers > 0) text += say('parent.herdWhy');
  parent.append(el('title', {}, text));
  return parent;
}

// ruleArrows draws what the recipe says c's node waits for, above the
// lane, and the blockers the server reports beyond the rule's, below it.
function ruleArrows({ snap, id, xOf, kept, reach }, c, arrows) {
  const n = c.node;
  if (n.holding || n.foreign) return;
  const edge = n.edge || '';
  if (n.waitsOn === 'children' && kept(c)) {
    const p = el('path', {
      class: `arrow rule edge-${edge || 'none'}`, d: `M${c.x - 6},${RULE_Y} L${c.x - 6},${BAR_Y + BAR_H + 2}`,
      'marker-end': `url(#${id}-ah-${edge === 'missing' ? 'missing' : 'children'})`,
      'data-from': n.name, 'data-to': snap.path, 'data-kind': 'rule', 'data-edge': edge,
    });
    p.append(el('title', {}, say('rule.children', { name: n.name, path: snap.path })));
    arrows.append(p);
  } else if (n.waitsFor && n.waitsOn !== 'children' && reach(c, xOf(n.waitsFor))) {
    // The server says who vouches for the edge (waitEdges, only on a
    // snapshot that shows provenance: lockqueue.Snapshot.WithWaitEdges).
    const prov = (n.waitEdges || []).find((e) => e.to === n.waitsFor)?.provenance;
    const p = el('path', {
      class: `arrow rule edge-${edge || 'none'}`, d: arc(c.x - 6, xOf(n.waitsFor) + 6, RULE_Y, -1, 68),
      'marker-end': `url(#${id}-ah-${edge === 'missing' ? 'missing' : 'rule'})`,
      'data-from': n.name, 'data-to': n.waitsFor, 'data-kind': 'rule', 'data-edge': edge, 'data-provenance': prov && provenance(prov),
    });
    const why = prov ? say(prov === 'server' ? 'rule.server' : 'rule.rule', { prov: provenance(prov) }) : say('rule.plain');
    p.append(el('title', {}, say('rule.waits', { name: n.name, target: n.waitsFor }) + why + (edge === 'missing' ? say('rule.missing') : '')));
    arrows.append(p);
  }
  for (const e of (n.waitEdges || []).filter((e) => e.to !== n.waitsFor)) {
    const tx = xOf(e.to);
    if (!reach(c, tx)) continue;
    const d = tx > c.x ? arc(c.x + 16, tx - 16, ACT_Y, 1, 46) : arc(c.x, tx, ACT_Y, 1.6, 66);
    const p = el('path', {
      class: 'arrow actual edge-confirmed blocked', d, 'marker-end': `url(#${id}-ah-confirmed)`,
      'data-from': n.name, 'data-to': e.to, 'data-kind': 'blocked', 'data-edge': 'confirmed', 'data-provenance': provenance('server'),
    });
    p.append(el('title', {}, say('blocked', { name: n.name, to: e.to, prov: provenance('server') })));
    arrows.append(p);
  }
}

// watchArrows draws the watches c's node really has, below the lane: on
// the parent, on a sibling, or on a node that is gone (a ghost), each of
// the kind the server says (lockqueue.Watch). A node that sends none has at
// most the one watch that confirms its rule.
function watchArrows(lane, c, arrows) {
  const { snap, id, xOf, kept, reach } = lane;
  const n = c.node;
  if (n.foreign) return;
  const watches = n.watches || (n.edge === 'confirmed' ? [{ to: n.waitsFor, kind: 'confirmed' }] : []);
  const inCycle = lane.deadlocked.has(n.name);
  watches.forEach((w, k) => {
    if (w.kind === 'children') {
      if (kept(c)) arrows.append(parentWatch(snap, id, c));
      return;
    }
    const target = w.to;
    const tx = xOf(target);
    const gone = w.kind === 'dangling';
    if ((tx === undefined && !gone) || (!kept(c) && !reach(c, tx))) return;
    // A stalled holder's watch is what keeps its client waiting: the
    // stuck edge.
    const stuck = w.kind === 'stalled';
    // Of a node in the deadlock cycle, the watch that is a wait of it
    // (lockqueue.MarkCycle); its others are what they are.
    const kind = w.cycle ? 'deadlock' : w.kind;
    let d;
    if (gone) {
      // A watch on a node that is gone: a stub to a ghost below the shape.
      const gx = c.x + 24;
      const gy = ACT_Y + 40 + 12 * k;
      d = `M${c.x + 4},${ACT_Y} Q${c.x + 6},${gy} ${gx - 6},${gy}`;
      const ghost = el('g', { class: 'ghost', 'data-ghost': target });
      ghost.append(el('circle', { cx: gx, cy: gy, r: 6 }));
      ghost.append(el('text', { x: gx + 9, y: gy + 4, class: 'ghost-label' }, say('watch.gone')));
      ghost.append(el('title', {}, say('watch.leaked', { target })));
      arrows.append(ghost);
    } else {
      // A watch forward in the queue leaves and lands inside the pair's
      // columns and bows shallow; a watch back leaves and lands outside and
      // bows deeper. A pair watching each other (a deadlock) shows two
      // nested arcs that never cross, started below the cycle rings so
      // the arrowheads stay clear of the shapes and their badges.
      const y = inCycle ? DEADLOCK_Y : ACT_Y;
      d = tx > c.x ? arc(c.x + 16, tx - 16, y, 1, 46) : arc(c.x, tx, y, 1.6, 66);
    }
    const cls = `arrow actual edge-${kind}` + (n.holding ? ' from-holder' : '') + (stuck ? ' stuck' : '');
    const p = el('path', { class: cls, d, 'marker-end': `url(#${id}-ah-${kind})`, 'data-from': n.name, 'data-to': target, 'data-kind': 'actual', 'data-edge': kind, 'data-stuck': stuck ? 'true' : undefined });
    let why = ['dangling', 'unexpected', 'deadlock'].includes(kind) ? say('watch.' + kind) : '';
    if (stuck) why = say(w.cycle ? 'watch.stuckCycle' : 'watch.stuck', { name: n.name });
    p.append(el('title', {}, say('watch', { name: n.name, target }) + why));
    arrows.append(p);
  });
}

// parentWatch is c's node's children watch on the lock parent.
function parentWatch(snap, id, c) {
  const n = c.node;
  const p = el('path', {
    class: `arrow actual edge-${n.edge || 'none'}` + (n.holding ? ' from-holder' : ''),
    d: `M${c.x + 6},${CY - R - 2} L${c.x + 6},${BAR_Y + BAR_H + 2}`,
    'marker-end': `url(#${id}-ah-children)`,
    'data-from': n.name, 'data-to': snap.path, 'data-kind': 'actual', 'data-edge': n.edge || '',
  });
  p.append(el('title', {}, say('watch.children', { name: n.name, path: snap.path })));
  return p;
}

// drawFold draws a fold: the nodes of a window the server did not send,
// counted. With opts.onFold it opens: the whole column answers clicks, as
// a node's does.
function drawFold(c, opts) {
  const g = el('g', { class: 'group', 'data-group': `${c.from}-${c.to}`, transform: `translate(${c.x},0)` });
  g.append(el('rect', { x: -c.w / 2 + 10, y: CY - 26, width: c.w - 20, height: 52, rx: 10 }));
  const waiting = c.count - c.holding;
  g.append(el('text', { x: 0, y: CY - 4, class: 'group-count' }, `… ${count(c.count)}`));
  g.append(el('text', { x: 0, y: CY + 13, class: 'group-label' }, c.holding && waiting ? say('group.holdWait', { hold: count(c.holding), wait: count(waiting) }) : say(c.holding ? 'group.holding' : 'group.waiting')));
  g.append(el('text', { x: 0, y: LABEL_Y, class: 'label dim' }, say('group.positions', { from: c.from + 1, to: c.to + 1 })));
  g.append(el('title', {}, say('group.title', { count: c.count, from: c.from + 1, to: c.to + 1 }) + (opts.onFold ? say('group.open') : '')));
  // A classroom's fold counts what the step notified in it, as the herd
  // meter does (web.Window.Notified).
  if (c.notified !== undefined) g.dataset.notified = String(c.notified);
  if (c.notified) g.append(el('text', { x: 0, y: LABEL_Y + 16, class: 'label notified' }, say('fold.notified', { n: c.notified })));
  if (opts.onFold) {
    g.prepend(el('rect', { class: 'hit', x: -c.w / 2 + 3, y: BAND_TOP, width: c.w - 6, height: HEIGHT - BAND_TOP - 4 }));
    g.setAttribute('role', 'button');
    g.setAttribute('tabindex', 0);
    g.addEventListener('click', () => opts.onFold(c.from));
    g.addEventListener('keydown', (e) => e.key === 'Enter' && opts.onFold(c.from));
  }
  return g;
}

// LOCKS_GAP is the room between two lanes of a scene, side by side;
// TITLE_H the room above them for their titles, when they are links.
const LOCKS_GAP = 44;
const TITLE_H = 24;

// drawLocks draws a scene of several locks into svg: a classroom step's
// locks (simulator.State.locks), or the locks of a deadlock a lock page's
// lock is in (its frame's scene). One lane per lock, side by side, each
// drawn by drawQueue, and the wait cycle across them: steps, in wait order
// as the server found them (waitgraph.Scene: [{lock, waiter, target, from,
// to, fromName, toName}], the waiter waiting in lock for the target, whose
// client waits in the next step's lock), empty when there is none. Each
// waiter's arrow to the node it waits for is the cycle's, in its lock's
// lane (above the shapes, as every wait), and a link below the lanes goes
// from that node to its client's own wait in the next lane: C1 waits for
// C2, which holds row 2 and waits for row 1, which C1 holds.
//   opts: drawQueue's; opts.href(snap, i) → the page a lane's title links
//   to (no titles without it)
export function drawLocks(svg, locks, steps, opts = {}) {
  const id = opts.id || 'locks';
  svg.replaceChildren();
  const defs = el('defs');
  defs.append(arrowHead(`${id}-ah-cycle`, 'deadlock', 12));
  svg.append(defs);
  const top = opts.href ? TITLE_H : 0;
  const lanes = [];
  let x = 0;
  locks.forEach((snap, i) => {
    const lane = el('svg', { class: 'lane', x, y: top, role: 'group' });
    lane.dataset.lock = snap.path || '';
    lane.setAttribute('aria-label', say('lane.aria', { path: snap.path }));
    svg.append(lane);
    const pos = drawQueue(lane, snap, { ...opts, id: `${id}-${i}` });
    if (opts.href) {
      const a = el('a', { class: 'lane-title', href: opts.href(snap, i) });
      a.dataset.lock = snap.path || '';
      a.append(el('text', { x: x + PAD, y: TITLE_H - 8 }, snap.path));
      svg.append(a);
    }
    lanes.push({ snap, lane, pos, x });
    x += (Number(lane.getAttribute('width')) || 320) + LOCKS_GAP;
  });
  const width = Math.max(320, x - LOCKS_GAP);
  svg.dataset.locks = String(locks.length);
  steps = steps || [];
  svg.dataset.cycle = steps.map((st) => st.fromName || st.from).join(' ');
  const size = (height) => {
    svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
    svg.setAttribute('width', width);
    svg.setAttribute('height', height);
  };
  size(top + HEIGHT);
  if (steps.length < 2) return;
  const bottom = top + HEIGHT - 4;
  const deepest = drawCycle(svg, lanes, steps, { id, bottom });
  size(Math.ceil(bottom + 0.75 * deepest + 14));
}

// drawCycle rings the cycle's nodes in their lanes, marks each waiter's
// arrow as the cycle's, and links below the lanes each target to its
// client's own wait in the next step's lane; it returns how deep the
// deepest link bows below bottom.
function drawCycle(svg, lanes, steps, { id, bottom }) {
  const laneOf = (lock) => lanes.find((l) => l.snap.path === lock);
  // The cycle's nodes are ringed, as a deadlock is on the lock page.
  for (const st of steps) {
    const l = laneOf(st.lock);
    for (const name of l ? [st.waiter, st.target] : []) {
      const g = l.lane.querySelector(`[data-node="${CSS.escape(name)}"]`);
      if (!g || g.classList.contains('deadlock')) continue;
      g.classList.add('deadlock');
      g.insertBefore(el('circle', { class: 'cycle-ring', cy: CY, r: R + 12 }), g.querySelector('.shape'));
    }
  }
  const links = el('g', { class: 'cycle' });
  let deepest = 0;
  steps.forEach((st, k) => {
    const here = laneOf(st.lock);
    if (!here) return;
    for (const p of here.lane.querySelectorAll(`.arrows [data-from="${CSS.escape(st.waiter)}"][data-to="${CSS.escape(st.target)}"]`)) {
      p.classList.add('in-cycle');
      p.dataset.cycle = 'true';
      p.setAttribute('marker-end', `url(#${id}-ah-cycle)`);
    }
    // The target's client holds here and waits in the next step's lane.
    const next = steps[(k + 1) % steps.length];
    const there = laneOf(next.lock);
    if (!there || there === here || !here.pos.has(st.target) || !there.pos.has(next.waiter)) return;
    const x1 = here.x + here.pos.get(st.target);
    const x2 = there.x + there.pos.get(next.waiter);
    // Below the lanes, from the holder's column to the waiter's: a longer
    // link bows deeper, so that the links of a cycle nest and never cross.
    const h = 30 + (24 * Math.abs(x2 - x1)) / COL;
    deepest = Math.max(deepest, h);
    const d = `M${x1},${bottom} C${x1},${bottom + h} ${x2},${bottom + h} ${x2},${bottom}`;
    const client = st.toName || st.to;
    const p = el('path', {
      class: 'cycle-link', d, 'marker-end': `url(#${id}-ah-cycle)`, 'data-cycle-link': client,
      'data-session': st.to, 'data-from-lock': here.snap.path, 'data-to-lock': there.snap.path,
    });
    p.append(el('title', {}, say('cycle.link', { who: client, session: st.to, here: here.snap.path, there: there.snap.path })));
    links.append(p);
    const tag = el('g', { class: 'cycle-tag', transform: `translate(${(x1 + x2) / 2},${bottom + 0.75 * h})` });
    tag.append(el('rect', { x: -24, y: -10, width: 48, height: 20, rx: 10 }));
    tag.append(el('text', { y: 4 }, client));
    tag.append(el('title', {}, say('cycle.tag', { who: client, here: here.snap.path, there: there.snap.path })));
    links.append(tag);
  });
  svg.append(links);
  return deepest;
}

// drawNode draws column c's node: its shape and badges, its four lines of
// labels, and the words for a pointer or a screen reader.
function drawNode(c, snap, opts, alerts, inCycle) {
  const n = c.node;
  const w = words();
  const l = n.lane || {};
  const mode = n.foreign ? 'unknown' : n.mode || 'unknown';
  const state = l.state || 'waiting';
  const cls = ['node', `mode-${mode}`, state];
  if (n.foreign) cls.push('foreign');
  if (n.zombie) cls.push('zombie');
  if (inCycle) cls.push('deadlock');
  if (n.stalledOn) cls.push('stalled');
  if (l.persistent) cls.push('persistent');
  if (n.name === opts.selected) cls.push('selected');
  const g = el('g', {
    class: cls.join(' '), 'data-node': n.name, 'data-state': state, 'data-mode': mode,
    transform: `translate(${c.x},0)`, tabindex: 0, role: 'button', 'data-stalled-on': n.stalledOn || undefined,
    'aria-label': say('node.aria', { name: n.name, mode: modeLabel(mode), state }) + (n.waitsFor ? say('node.ariaWaits', { target: n.waitsFor }) : '') +
      (n.stalledOn ? say('node.ariaStalled', { stalled: w.stalled, on: n.stalledOn }) : '') + (n.partOf ? say('node.ariaPartOf', { partOf: w.partOf, of: n.partOf }) : ''),
  });
  const tip = [n.name, say('node.tipState', { mode: modeLabel(mode), state }) + (n.waitsFor ? say('node.tipWaits', { target: n.waitsFor }) : '') + (n.waitsOn === 'children' ? say('node.tipChildren') : '')];
  if (n.stalledOn) tip.push(say('node.tipStalled', { stalled: w.stalled, on: n.stalledOn, since: n.stalledSince }));
  if (n.partOf) tip.push(say('node.tipPartOf', { partOf: w.partOf, of: n.partOf }));
  if (n.session) tip.push(say('node.tipSession', { session: n.session }));
  if (l.hint) tip.push(l.hint);
  for (const a of alerts || []) tip.push(say('node.tipAlert', { kind: a.kind, message: a.message }));
  g.append(el('title', {}, tip.join('\n')));
  // The whole column answers clicks, not only the shape's pixels.
  g.append(el('rect', { class: 'hit', x: -c.w / 2 + 3, y: BAND_TOP, width: c.w - 6, height: HEIGHT - BAND_TOP - 4 }));
  drawShape(g, n, mode, alerts, inCycle);
  // The three lines under the shape are the server's (views.LaneOf).
  const [name, data, session] = l.lines || [n.name, '', ''];
  g.append(el('text', { class: 'label name', y: LABEL_Y }, name));
  g.append(el('text', { class: 'label data', y: LABEL_Y + LINE }, data));
  g.append(el('text', { class: 'label session', y: LABEL_Y + 2 * LINE }, session));
  g.append(timeLabel(n));
  g.addEventListener('click', () => opts.onSelect && opts.onSelect(n.name));
  g.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      opts.onSelect && opts.onSelect(n.name);
    }
  });
  return g;
}

// drawShape draws n's shape into g, with its halo and rings, and its
// badges: alerts, a stall, a persistent node.
function drawShape(g, n, mode, alerts, inCycle) {
  if (n.holding) g.append(el('circle', { class: 'halo', cy: CY, r: R + 9 }));
  // Held by the rule, but its client does not know: the halo is broken by
  // a dashed ring, and an hourglass badge says it still waits.
  if (n.stalledOn) g.append(el('circle', { class: 'stall-ring', cy: CY, r: R + 9 }));
  if (inCycle) g.append(el('circle', { class: 'cycle-ring', cy: CY, r: R + 12 }));
  const shape = shapePath(mode, R);
  shape.setAttribute('transform', `translate(0,${CY})`);
  g.append(shape);
  g.append(el('text', { class: 'glyph', y: CY + 5 }, modeWord(n.foreign ? 'unknown' : mode).letter));
  if (alerts && alerts.length) {
    const b = el('g', { class: 'badge alert', transform: `translate(${R + 7},${CY - R + 4})` });
    b.append(el('circle', { r: 8 }));
    b.append(el('text', { y: 4 }, '!'));
    b.setAttribute('data-alerts', alerts.map((a) => a.kind).join(' '));
    g.append(b);
  }
  if (n.stalledOn) {
    const b = el('g', { class: 'badge stalled', transform: `translate(${-R - 7},${CY + R - 4})` });
    b.append(el('circle', { r: 8 }));
    // An hourglass, drawn: not every font has the glyph.
    b.append(el('path', { class: 'hourglass', d: 'M-4,-5 L4,-5 L0,0 L4,5 L-4,5 L0,0 z' }));
    b.append(el('title', {}, say('node.stillWaits')));
    g.append(b);
  }
  if (n.lane && n.lane.persistent) {
    const b = el('g', { class: 'badge persistent', transform: `translate(${-R - 7},${CY - R + 4})` });
    b.append(el('rect', { x: -8, y: -8, width: 16, height: 16, rx: 3 }));
    b.append(el('text', { y: 4 }, 'P'));
    g.append(b);
  }
}

// timeLabel is n's clock line, as the server words it (views.LaneOf): how
// long it has held or waited, or the time its lease or its zombie's
// session has left, which tick counts.
function timeLabel(n) {
  const l = n.lane || {};
  const t = el('text', { class: 'label time' + (l.kind ? ' ' + l.kind : ''), y: LABEL_Y + 3 * LINE, 'data-verb': l.verb || '' });
  if (l.until) {
    t.setAttribute('data-until', l.until);
    t.setAttribute('data-left', l.left);
    if (l.expired) t.setAttribute('data-expired', l.expired);
  } else if (l.since > 0) {
    t.setAttribute('data-since', l.since);
  } else {
    t.textContent = (l.verb || '') + ' ?';
    if (l.hint) t.setAttribute('title', l.hint);
  }
  return t;
}

// tick refreshes every live duration under root; call it once a second.
export function tick(root, now = Date.now()) {
  for (const t of root.querySelectorAll('[data-until]')) {
    // Under a data-clock-at (a classroom step) a lease's or a zombie's time
    // left is the step's: the run holds its keys', leases' and sessions'
    // clocks between steps, so counting down in real time would show as
    // expired what the server holds.
    const frozen = t.hasAttribute('data-left') && t.closest('[data-clock-at]');
    const left = frozen ? Number(t.getAttribute('data-left')) : Number(t.getAttribute('data-until')) - now;
    t.textContent = left > 0 ? [t.getAttribute('data-verb'), say('clock.left', { left: fmtDur(left) })].filter(Boolean).join(' · ') : t.getAttribute('data-expired') || say('clock.expiryDue');
  }
  for (const t of root.querySelectorAll('[data-since]:not([data-until])')) {
    const since = Number(t.getAttribute('data-since'));
    if (!(since > 0)) {
      // Unknown start (views.ClockOf): say so, never a made-up age.
      t.textContent = [t.getAttribute('data-verb'), '?'].filter(Boolean).join(' ');
      if (!t.title) t.title = say('node.waitUnknown');
      continue;
    }
    // A data-clock-at around it freezes the clock: the classroom shows a step
    // as of the run's clock at that step, not as of now.
    const frozen = t.closest('[data-clock-at]');
    const at = frozen ? Number(frozen.getAttribute('data-clock-at')) : now;
    t.textContent = [t.getAttribute('data-verb'), fmtDur(at - since)].filter(Boolean).join(' ');
  }
}

// animateNotify moves a dot from the x of one node to another along the lower
// arcs, for watch notifications in the classroom.
export function animateNotify(svg, fromX, toX, ms = 700) {
  return animateDot(svg, arc(fromX, toX, ACT_Y, 1, 66), ms);
}

// animateNotifyParent drops a dot from the parent bar down to a node: the
// notification a children watch delivers.
export function animateNotifyParent(svg, toX, ms = 700) {
  return animateDot(svg, `M${toX + 6},${BAR_Y + BAR_H} L${toX + 6},${CY - R - 2}`, ms);
}

// animateDot moves a dot along path d over ms, then removes both.
function animateDot(svg, d, ms) {
  const p = el('path', { d, class: 'notify-path' });
  const dot = el('circle', { r: 6, class: 'notify-dot' });
  svg.append(p, dot);
  const len = p.getTotalLength();
  const start = performance.now();
  return new Promise((resolve) => {
    const step = (t) => {
      const f = Math.min(1, (t - start) / ms);
      const pt = p.getPointAtLength(len * f);
      dot.setAttribute('cx', pt.x);
      dot.setAttribute('cy', pt.y);
      if (f < 1) requestAnimationFrame(step);
      else {
        p.remove();
        dot.remove();
        resolve();
      }
    };
    requestAnimationFrame(step);
  });
}

// legend writes the key to shapes and arrows into an HTML element: each entry
// is a small SVG swatch and a text label, and the entries wrap like words, so
// the key stays at the page's text size at any width.
// items are the entries: by default the page's service's (views'
// Service.Legend in #lane-words); a name picks one of the page's services'
// (#lane-words legends, by the name its runs carry: the classroom).
// modes, when given, keeps only those modes' shapes: a classroom
// scenario's lock takes only its own.
export function legend(root, items = words().legend, modes = null) {
  if (typeof items === 'string') items = (words().legends || {})[items];
  root.replaceChildren();
  const svgOf = (w, h) => el('svg', { class: 'swatch', width: w, height: h, viewBox: `0 0 ${w} ${h}`, 'aria-hidden': 'true' });
  // The service's own entries (its lockservice.Words): only what its
  // locks can show.
  for (const { key, swatch, label, title } of items || []) {
    if (swatch === 'mode' && modes && !modes.includes(key)) continue;
    let sv;
    if (swatch === 'mode') {
      sv = svgOf(22, 22);
      const g = el('g', { class: `node mode-${key} waiting`, transform: 'translate(11,11)' });
      g.append(shapePath(key, 7));
      sv.append(g);
    } else if (swatch === 'holding' || swatch === 'stalled') {
      sv = svgOf(26, 26);
      const stalled = swatch === 'stalled';
      const g = el('g', { class: stalled ? 'node mode-read holding stalled' : 'node mode-write holding', transform: 'translate(13,13)' });
      g.append(el('circle', { class: 'halo', r: 12 }));
      if (stalled) g.append(el('circle', { class: 'stall-ring', r: 12 }));
      g.append(shapePath(stalled ? 'read' : 'write', 7));
      sv.append(g);
    } else {
      sv = svgOf(34, 14);
      sv.append(markers(`lg-${key}`));
      sv.append(el('path', { class: `arrow ${swatch} edge-${key}`, d: 'M2,7 L30,7', 'marker-end': `url(#lg-${key}-ah-${key})` }));
    }
    const li = document.createElement('li');
    li.dataset.legend = key;
    if (title) li.title = title;
    li.append(sv, Object.assign(document.createElement('span'), { textContent: label }));
    root.append(li);
  }
}
