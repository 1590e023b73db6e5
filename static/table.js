// table.js shows a queue as a table (for screen readers, and for copying into
// a bug report) and as plain text. Long queues are paged, so a 10,000-node
// lock costs one page of rows in the DOM.

import { alertIndex, fmtDur, tick, holdHint, modeLabel, PART_OF, shortName, STALLED, waitEdges, PROVENANCE, usesNeutralFields, leaseUntil } from './queue.js';

// nameParts splits a znode name where a line may break without hiding what
// matters: after each run of "-" or "_" and before the 10-digit sequence, so
// "_c_8f3a…-__READ__0000000003" wraps between its parts, never mid-part.
// views.NameParts is the same rule for the server-rendered first page.
export function nameParts(name) {
  const parts = name.match(/[^-_]*[-_]+|[^-_]+$/g) || [name];
  // A leading run of separators ("_c_…") stays with what follows it.
  if (parts.length > 1 && /^[-_]+$/.test(parts[0])) parts.splice(0, 2, parts[0] + parts[1]);
  const last = parts[parts.length - 1];
  const m = last.match(/^(.*[^0-9])(\d{10})$/);
  if (m) parts.splice(parts.length - 1, 1, m[1], m[2]);
  return parts.filter(Boolean);
}

// breakable fills el with name, with a line-break opportunity between parts.
export function breakable(el, name) {
  el.replaceChildren();
  nameParts(name).forEach((p, i) => {
    if (i) el.append(document.createElement('wbr'));
    el.append(p);
  });
  return el;
}

// refs fills a cell with the nodes a waiter waits for or watches, each as
// the lane labels it, its full name in the tooltip: the node column has every
// name whole, and two more columns of whole names (kazoo's have 32 hex digits
// and no hyphen to wrap at) made the table 1,700 px wide. A path outside the
// node's folder (prefix) stays whole.
function refs(cell, paths, prefix) {
  paths.forEach((p, i) => {
    if (i) cell.append(', ');
    const name = p.startsWith(prefix) && !p.slice(prefix.length).includes('/') ? p.slice(prefix.length) : '';
    if (!name) {
      cell.append(breakable(document.createElement('span'), p));
      return;
    }
    const a = document.createElement('abbr');
    a.title = name;
    a.textContent = shortName(name);
    cell.append(a);
  });
  return cell;
}

function td(text, cls) {
  const c = document.createElement('td');
  c.textContent = text;
  if (cls) c.className = cls;
  return c;
}

function watchText(n, prefix) {
  if (n.watching === null || n.watching === undefined) return n.foreign ? '' : 'unknown';
  if (!n.watching.length) return 'nothing';
  return n.watching.map((p) => (p.startsWith(prefix) && !p.slice(prefix.length).includes('/') ? p.slice(prefix.length) : p)).join(', ');
}

function stateText(n) {
  if (n.foreign) return 'foreign';
  if (n.partOf) return 'part'; // its acquirer's other node: not a waiter of its own
  return n.holding ? 'holding' : 'waiting';
}

// stateLabel is the state column: views.NodeState is the same for the
// server-rendered first page.
function stateLabel(n) {
  if (n.holding && n.zombie) return 'holding (zombie)';
  if (n.stalledOn) return 'holding (stalled: client still waits)';
  if (n.partOf) return PART_OF + n.partOf + (n.zombie ? ' (zombie)' : '');
  return stateText(n) + (n.zombie ? ' (zombie)' : '');
}

// edgeText is the edge column: a stalled holder's is "stalled"
// (views.EdgeText).
function edgeText(n) {
  return n.stalledOn ? 'stalled' : n.edge || '';
}

function waitsText(n) {
  if (n.waitsOn === 'children' && n.folder) return 'a free lease'; // a semaphore's pending acquirer
  if (n.waitsOn === 'children') return 'children of parent';
  return n.waitsFor || '';
}

// HEAD is the table's columns; a snapshot with the service-neutral fields
// adds NEUTRAL_HEAD after the session (views.LockPage says the same).
const HEAD = ['#', 'node', 'mode', 'state', 'waits for', 'watches', 'edge', 'session', 'data', 'time', 'alerts'];
const NEUTRAL_HEAD = ['order', 'client', 'lease', 'blocked by'];

// edgesCell lists a node's waits-for edges with who vouches for each.
function edgesCell(n) {
  const c = td('', 'waits');
  waitEdges(n).forEach((e, i) => {
    if (i) c.append(', ');
    const s = document.createElement('span');
    s.className = 'wait-edge prov-' + PROVENANCE[e.provenance];
    s.dataset.to = e.to;
    s.dataset.provenance = PROVENANCE[e.provenance];
    const small = document.createElement('small');
    small.textContent = `(${PROVENANCE[e.provenance]})`;
    s.append(e.to, ' ', small);
    c.append(s);
  });
  return c;
}

// leaseCell is a node's lease, its time left counted down by tick.
function leaseCell(snap, n) {
  const c = td('', 'lease');
  if (!n.leaseId && !n.leaseTtlMs && !n.leaseLeftMs) return c;
  c.dataset.lease = n.leaseId || '';
  const id = document.createElement('span');
  id.className = 'mono';
  id.textContent = n.leaseId || '';
  c.append(id);
  const until = leaseUntil(snap, n);
  if (until) {
    const left = document.createElement('span');
    left.className = 'lease-left';
    left.dataset.until = until;
    left.dataset.verb = '';
    left.dataset.expired = 'expired';
    c.append(' ', left);
  }
  return c;
}

function dataText(n) {
  if (n.dataBinary) return 'base64:' + n.data;
  return n.data || '';
}

export class QueueTable {
  // root holds the table; opts.pageSize rows per page; opts.onSelect(name).
  constructor(root, opts = {}) {
    this.root = root;
    this.pageSize = opts.pageSize || 100;
    this.onSelect = opts.onSelect;
    this.page = 0;
    this.filter = '';
    this.snap = null;
    this.build();
  }

  build() {
    this.root.replaceChildren();
    const bar = document.createElement('div');
    bar.className = 'table-bar';
    this.filterInput = document.createElement('input');
    this.filterInput.type = 'search';
    this.filterInput.placeholder = 'filter by name, session or data';
    this.filterInput.setAttribute('aria-label', 'filter rows');
    this.filterInput.addEventListener('input', () => {
      this.filter = this.filterInput.value.trim().toLowerCase();
      this.page = 0;
      this.render();
    });
    this.prev = button('‹ prev', () => this.go(this.page - 1));
    this.next = button('next ›', () => this.go(this.page + 1));
    this.info = document.createElement('span');
    this.info.className = 'page-info';
    this.info.setAttribute('aria-live', 'polite');
    bar.append(this.filterInput, this.prev, this.info, this.next);

    this.table = document.createElement('table');
    this.table.className = 'queue-table';
    this.caption = document.createElement('caption');
    const head = document.createElement('thead');
    this.headRow = document.createElement('tr');
    this.neutral = false;
    this.heads();
    head.append(this.headRow);
    this.body = document.createElement('tbody');
    this.table.append(this.caption, head, this.body);
    const wrap = document.createElement('div');
    wrap.className = 'table-wrap';
    wrap.append(this.table);
    this.root.append(bar, wrap);
  }

  // heads fills the header row for the columns the snapshot needs.
  heads() {
    const cols = this.neutral ? [...HEAD.slice(0, 8), ...NEUTRAL_HEAD, ...HEAD.slice(8)] : HEAD;
    this.headRow.replaceChildren(
      ...cols.map((h) => {
        const th = document.createElement('th');
        th.scope = 'col';
        th.textContent = h;
        return th;
      }),
    );
  }

  go(page) {
    this.page = page;
    this.render();
  }

  // show jumps to the page holding name.
  show(name) {
    if (!this.snap) return;
    const rows = this.rows();
    const i = rows.findIndex((r) => r.n.name === name);
    if (i >= 0) this.go(Math.floor(i / this.pageSize));
    const tr = this.body.querySelector(`tr[data-row="${CSS.escape(name)}"]`);
    if (tr) tr.scrollIntoView({ block: 'nearest' });
  }

  update(snap, timing, selected) {
    this.snap = snap;
    this.timing = timing;
    this.selected = selected;
    this.render();
  }

  rows() {
    const nodes = this.snap.nodes || [];
    const all = nodes.map((n, i) => ({ n, i }));
    if (!this.filter) return all;
    const f = this.filter;
    return all.filter(({ n }) => n.name.toLowerCase().includes(f) || (n.session || '').includes(f) || (n.data || '').toLowerCase().includes(f));
  }

  render() {
    const snap = this.snap;
    if (!snap) return;
    const rows = this.rows();
    const pages = Math.max(1, Math.ceil(rows.length / this.pageSize));
    this.page = Math.min(Math.max(0, this.page), pages - 1);
    const from = this.page * this.pageSize;
    const slice = rows.slice(from, from + this.pageSize);
    const alerts = alertIndex(snap);
    const prefix = snap.path === '/' ? '/' : snap.path + '/';
    const neutral = usesNeutralFields(snap);
    if (neutral !== this.neutral) {
      this.neutral = neutral;
      this.heads();
    }
    const holders = (snap.nodes || []).filter((n) => n.holding).length;
    const others = (snap.nodes || []).length - holders;
    this.caption.textContent = `${snap.path}: ${holders} holding, ${others} other node${others === 1 ? '' : 's'}` + (this.filter ? ` (${rows.length} match the filter)` : '');
    const frag = document.createDocumentFragment();
    for (const { n, i } of slice) {
      const tr = document.createElement('tr');
      tr.dataset.row = n.name;
      tr.dataset.state = stateText(n);
      if (n.stalledOn) tr.dataset.stalled = '';
      if (n.name === this.selected) tr.className = 'selected';
      tr.append(td(String(i + 1), 'num'));
      const name = td(n.name, 'name');
      const link = document.createElement('button');
      link.type = 'button';
      link.className = 'linkish';
      breakable(link, n.name);
      link.addEventListener('click', () => this.onSelect && this.onSelect(n.name));
      name.replaceChildren(link);
      tr.append(name);
      tr.append(td(modeLabel(n.mode), 'mode mode-' + n.mode));
      tr.append(td(stateLabel(n), 'state ' + stateText(n)));
      // A semaphore's node names the siblings in its own folder, as the lane does.
      const np = n.folder ? n.folder + '/' : prefix;
      if (neutral) tr.append(edgesCell(n));
      else tr.append(n.waitsFor && n.waitsOn !== 'children' ? refs(td(''), [np + n.waitsFor], np) : td(waitsText(n)));
      tr.append(n.watching && n.watching.length ? refs(td(''), n.watching, np) : td(watchText(n, prefix)));
      const edge = edgeText(n);
      tr.append(td(edge, edge ? 'edge edge-' + edge : ''));
      tr.append(td(n.session || ''));
      if (neutral) tr.append(td(n.order ? String(n.order) : '', 'num order'), td(n.client || '', 'mono client'), leaseCell(snap, n), td((n.blockedBy || []).join(', '), 'mono blocked'));
      tr.append(td(dataText(n), 'data'));
      const t = td('', 'time');
      if (this.timing) {
        t.dataset.since = this.timing.since(n);
        t.dataset.verb = this.timing.verb(n);
        if (holdHint(t.dataset.verb)) t.title = holdHint(t.dataset.verb);
      }
      tr.append(t);
      tr.append(td((alerts.get(n.name) || []).map((a) => a.kind).join(', '), 'alerts'));
      frag.append(tr);
    }
    this.body.replaceChildren(frag);
    this.info.textContent = rows.length ? `rows ${from + 1}–${from + slice.length} of ${rows.length.toLocaleString('en-US')} · page ${this.page + 1}/${pages}` : 'no rows';
    this.prev.disabled = this.page === 0;
    this.next.disabled = this.page >= pages - 1;
    tick(this.body);
  }
}

function button(text, fn) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  b.addEventListener('click', fn);
  return b;
}

function pad(rows) {
  const widths = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] || 0, c.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ').trimEnd()).join('\n');
}

// snapshotText is the whole state as plain text, for a bug report.
export function snapshotText(snap, timing, now = Date.now()) {
  const out = [];
  out.push(`lock ${snap.path}`);
  out.push(`recipe ${snap.recipe || '(none)'} · revision ${snap.revision} · connection ${snap.connection} · watches from ${snap.watchSource || 'none'}` + (snap.leases ? ` · leases ${snap.leases}` : '') + ` · updated ${snap.updatedAt}`);
  if (snap.exists === false) out.push('the lock parent does not exist');
  if (snap.error) out.push(`error: ${snap.error}`);
  if (snap.invisibleChildWatches > 0) out.push(`children watches the server cannot list: ${snap.invisibleChildWatches}`);
  const prefix = snap.path === '/' ? '/' : snap.path + '/';
  const alerts = alertIndex(snap);
  const neutral = usesNeutralFields(snap);
  const head = ['#', 'node', 'mode', 'state', 'waits-for', 'watches', 'edge', 'session', 'data', 'time', 'alerts'];
  const rows = [neutral ? [...head.slice(0, 8), 'order', 'client', 'lease', 'blocked-by', ...head.slice(8)] : head];
  (snap.nodes || []).forEach((n, i) => {
    const since = timing ? timing.since(n) : Date.parse(n.ctime);
    const waits = neutral ? waitEdges(n).map((e) => `${e.to}(${PROVENANCE[e.provenance]})`).join(',') : waitsText(n);
    const row = [
      String(i + 1), n.name, modeLabel(n.mode), stateText(n) + (n.zombie ? '(zombie)' : '') + (n.stalledOn ? '(stalled)' : ''), waits || '-', watchText(n, prefix) || '-',
      edgeText(n) || '-', n.session || '-', JSON.stringify(dataText(n)), (timing ? timing.verb(n) : n.holding ? 'age' : 'waits') + ' ' + fmtDur(now - since),
      (alerts.get(n.name) || []).map((a) => a.kind).join(',') || '-',
    ];
    if (neutral) {
      const until = leaseUntil(snap, n);
      const lease = [n.leaseId, until ? (until > now ? fmtDur(until - now) + ' left' : 'expired') : ''].filter(Boolean).join(' ');
      row.splice(8, 0, n.order ? String(n.order) : '-', n.client || '-', lease || '-', (n.blockedBy || []).join(',') || '-');
    }
    rows.push(row);
  });
  out.push('');
  out.push(pad(rows));
  if ((snap.alerts || []).length) {
    out.push('');
    out.push('alerts:');
    for (const a of snap.alerts) out.push(`- ${a.kind}: ${a.message}` + (a.nodes && a.nodes.length ? ` [${a.nodes.join(', ')}]` : ''));
  }
  return out.join('\n') + '\n';
}

// definitions makes a <dl> and add(term, text, class), which appends one
// entry and answers its <dd>.
export function definitions() {
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

// describeNode fills a detail pane with everything known about one node.
export function describeNode(root, snap, name, timing) {
  const n = (snap.nodes || []).find((x) => x.name === name);
  root.replaceChildren();
  if (!n) {
    const p = document.createElement('p');
    p.className = 'dim';
    p.textContent = name ? `${name} is gone from the queue.` : 'Click a node to see its details.';
    root.append(p);
    return;
  }
  const prefix = snap.path === '/' ? '/' : snap.path + '/';
  const alerts = alertIndex(snap).get(n.name) || [];
  const [dl, add] = definitions();
  add('node', n.name, 'mono');
  add('full path', (n.folder ? n.folder + '/' : prefix) + n.name, 'mono');
  add('mode', modeLabel(n.mode) + (n.recipe ? ` (${n.recipe})` : ''));
  add('state', (n.partOf ? `${PART_OF}${n.partOf}: one contender with it, not a waiter of its own` : stateText(n)) + (n.zombie ? ', zombie: its session has no live connection' : ''));
  if (!n.holding && !n.foreign) add('recipe says it waits for', n.waitsOn === 'children' ? `the children of ${snap.path}` : n.waitsFor || '-', 'mono');
  if (n.stalledOn) add('stalled', `${STALLED} ${n.stalledOn}, since ${n.stalledSince}: its client missed the wake-up and does not know it holds`, 'edge-stalled');
  add('its session watches', watchText(n, prefix), 'mono');
  if (n.edge) add('edge', n.edge, 'edge-' + n.edge);
  if (usesNeutralFields(snap)) {
    if (n.order) add('order', String(n.order));
    if (n.client) add('client', n.client, 'mono');
    for (const e of waitEdges(n)) add(`waits for (${PROVENANCE[e.provenance]})`, e.to, 'mono');
    if ((n.blockedBy || []).length) add('blocked by (server)', n.blockedBy.join(', '), 'mono');
    if (n.leaseId || n.leaseTtlMs || n.leaseLeftMs) {
      const dd = add('lease', [n.leaseId, n.leaseTtlMs ? `ttl ${fmtDur(n.leaseTtlMs)}` : ''].filter(Boolean).join(' · ') + ' ', 'mono');
      const until = leaseUntil(snap, n);
      if (until) {
        const left = document.createElement('span');
        left.className = 'lease-left';
        Object.assign(left.dataset, { until, verb: '', expired: 'expired' });
        dd.append(left);
      }
    }
  }
  if (n.session) add('session', n.session + (n.session === '0x0' ? ' (persistent node)' : ''), 'mono');
  add('data', n.dataBinary ? `base64 ${n.data}` : n.data || '(empty)', 'mono');
  // Only ZooKeeper has a czxid and a sequence to show.
  add('created', n.ctime + (n.czxid || !usesNeutralFields(snap) ? ` (czxid 0x${Number(n.czxid).toString(16)}, seq ${n.seq})` : ''));
  const verb = timing ? timing.verb(n) : '';
  const held = verb === 'holds ≥' ? 'holding for at least' : verb === 'holds ≤' ? 'holding for at most (since created)' : 'holding for';
  const t = add(n.foreign ? 'age' : n.holding ? held : 'waiting for', '', 'time');
  if (timing) {
    t.dataset.since = timing.since(n);
    t.dataset.verb = '';
    if (holdHint(verb)) t.title = holdHint(verb);
  }
  if (n.zombie && n.expiresInMs > 0) add('session expires in', fmtDur(n.expiresInMs) + ' (at the last update)');
  for (const a of alerts) add('⚠ ' + a.kind, a.message, 'alert-text');
  root.append(dl);
  tick(root);
}
