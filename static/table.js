// table.js shows a queue as a table (for screen readers, and for copying into
// a bug report) and one node's details. The table's rows are the server's
// (views.QueueTable), fetched a page at a time, so a 10,000-node lock costs
// one page of rows in the DOM and the browser words no label of its own.

import { alertIndex, fmtDur, tick, holdHint, modeLabel, PART_OF, STALLED, waitEdges, PROVENANCE, usesNeutralFields, leaseUntil } from './queue.js';

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

export class QueueTable {
  // root holds the table (the server's first paint, if any); opts.pageSize
  // rows per page; opts.onSelect(name); opts.source(query, snap) fetches a
  // page of the table the server renders for snap (views.QueueTable);
  // opts.onParts(fragment) gets the whole answer, for what came with it.
  constructor(root, opts = {}) {
    this.root = root;
    this.pageSize = opts.pageSize || 100;
    this.onSelect = opts.onSelect;
    this.source = opts.source;
    this.onParts = opts.onParts;
    this.page = 0;
    this.filter = '';
    this.snap = null;
    this.showName = '';
    this.busy = false;
    this.dirty = false;
    this.build();
  }

  build() {
    const bar = document.createElement('div');
    bar.className = 'table-bar';
    this.filterInput = document.createElement('input');
    this.filterInput.type = 'search';
    this.filterInput.placeholder = 'filter by name, session or data';
    this.filterInput.setAttribute('aria-label', 'filter rows');
    this.filterInput.addEventListener('input', () => {
      this.filter = this.filterInput.value.trim().toLowerCase();
      this.page = 0;
      this.refresh();
    });
    this.prev = button('‹ prev', () => this.go(this.page - 1));
    this.next = button('next ›', () => this.go(this.page + 1));
    this.info = document.createElement('span');
    this.info.className = 'page-info';
    this.info.setAttribute('aria-live', 'polite');
    bar.append(this.filterInput, this.prev, this.info, this.next);
    for (const el of this.root.querySelectorAll('.more-rows')) el.remove(); // the pager says it now
    if (!this.root.querySelector('.table-wrap')) this.root.append(Object.assign(document.createElement('div'), { className: 'table-wrap' }));
    this.root.prepend(bar);
    this.root.addEventListener('click', (e) => {
      const b = e.target.closest('td.name button');
      if (b && this.onSelect) this.onSelect(b.closest('tr').dataset.row);
    });
  }

  go(page) {
    this.page = page;
    this.refresh();
  }

  // show jumps to the page holding name.
  show(name) {
    this.showName = name;
    this.refresh();
  }

  update(snap, timing, selected) {
    this.snap = snap;
    this.timing = timing;
    this.selected = selected;
    this.refresh();
  }

  // refresh asks the server for the page to show; one request at a time,
  // and a change that comes meanwhile is fetched once it is answered.
  async refresh() {
    if (!this.snap || !this.source) return;
    if (this.busy) {
      this.dirty = true;
      return;
    }
    this.busy = true;
    try {
      do {
        this.dirty = false;
        const show = this.showName;
        const q = new URLSearchParams({ page: String(Math.max(0, this.page)), size: String(this.pageSize), q: this.filter, selected: this.selected || '', show });
        let html;
        try {
          const res = await this.source(q, this.snap);
          if (!res.ok) throw new Error(res.statusText);
          html = await res.text();
        } catch {
          return; // the table stays as it was; the next change asks again
        }
        if (this.dirty) continue;
        if (this.showName === show) this.showName = '';
        this.put(html, show);
      } while (this.dirty);
    } finally {
      this.busy = false;
    }
  }

  // put swaps the server's page in and starts its clocks, which only the
  // page knows: when it saw each node start holding (Timing).
  put(html, show) {
    const tpl = document.createElement('template');
    tpl.innerHTML = html;
    const wrap = tpl.content.querySelector('.table-wrap');
    if (!wrap) return;
    if (this.onParts) this.onParts(tpl.content);
    const byName = new Map((this.snap.nodes || []).map((n) => [n.name, n]));
    for (const tr of wrap.querySelectorAll('tbody tr')) {
      const n = byName.get(tr.dataset.row);
      const t = tr.querySelector('td.time');
      if (!n || !t || !this.timing) continue;
      t.dataset.since = this.timing.since(n);
      t.dataset.verb = this.timing.verb(n);
      if (holdHint(t.dataset.verb)) t.title = holdHint(t.dataset.verb);
    }
    this.root.querySelector('.table-wrap').replaceWith(wrap);
    this.page = Number(wrap.dataset.page);
    const pages = Number(wrap.dataset.pages);
    this.info.textContent = wrap.dataset.info;
    this.prev.disabled = this.page === 0;
    this.next.disabled = this.page >= pages - 1;
    tick(wrap);
    const tr = show && wrap.querySelector(`tr[data-row="${CSS.escape(show)}"]`);
    if (tr) tr.scrollIntoView({ block: 'nearest' });
  }
}

function button(text, fn) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  b.addEventListener('click', fn);
  return b;
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
