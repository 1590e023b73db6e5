// table.js keeps the server's rendering of a queue's table current (for
// screen readers, and for copying into a bug report) and starts the clocks
// of it and of a node's detail pane. The table's rows are the server's
// (views.QueueTable), fetched a page at a time, so a 10,000-node lock costs
// one page of rows in the DOM and the browser words no label of its own.

import { tick, say } from './queue.js';
import { morph } from './morph.js';

// FILTER_PAUSE_MS is how long the typing of a filter pauses before the
// rows are asked for.
const FILTER_PAUSE_MS = 250;

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
    // onQuery(), in place of a source, is told the page, filter or
    // selection changed: the page's socket brings that view (framed).
    this.onQuery = opts.onQuery;
    // viaSocket(), when it says so, has the page's socket bring the view
    // asked for (onQuery), not a request.
    this.viaSocket = opts.viaSocket;
    // onPage(page) is told the page shown, once the server has answered.
    this.onPage = opts.onPage;
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
    this.filterInput.placeholder = say('table.filter');
    this.filterInput.setAttribute('aria-label', say('table.filterAria'));
    // A filter typed is asked for once the typing pauses (or at Enter):
    // each ask moves the page's view, a socket with the whole window of a
    // long queue (80 KB and more), and a name typed a key at a time was
    // one each.
    let typing = null;
    const apply = () => {
      clearTimeout(typing);
      const f = this.filterInput.value.trim().toLowerCase();
      if (f === this.filter) return;
      this.filter = f;
      this.go(0);
    };
    this.filterInput.addEventListener('input', () => {
      clearTimeout(typing);
      typing = setTimeout(apply, FILTER_PAUSE_MS);
    });
    this.filterInput.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') apply();
    });
    this.prev = button(say('table.prev'), () => this.go(this.page - 1));
    this.next = button(say('table.next'), () => this.go(this.page + 1));
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
    this.showName = '';
    this.refresh();
  }

  // show jumps to the page holding name, and scrolls to its row once it is
  // shown.
  show(name) {
    this.showName = name;
    this.scrollTo = name;
    this.refresh();
  }

  // update shows snap; pending is a request() made for it, if the page
  // started one while it read snap.
  update(snap, selected, pending = null) {
    Object.assign(this, { snap, selected, pending });
    this.refresh();
  }

  // framed shows snap, a live snapshot, with html, the parts its frame
  // brought (null: none; what is shown stays). Nothing is fetched.
  framed(snap, selected, html) {
    Object.assign(this, { snap, selected, pending: null });
    if (!html) return;
    this.put(html, this.scrollTo || '');
    if (this.scrollTo && this.root.querySelector(`tr[data-row="${CSS.escape(this.scrollTo)}"]`)) this.scrollTo = '';
  }

  query(show, selected = this.selected) {
    return new URLSearchParams({ page: String(Math.max(0, this.page)), size: String(this.pageSize), q: this.filter, selected: selected || '', show });
  }

  // request starts fetching the page the next update will show, for a page
  // that knows the next snapshot's moment before it has the snapshot (a
  // scrub asks for both at once); snap is the source's argument.
  request(selected, snap = this.snap) {
    const q = this.query(this.showName, selected);
    const key = q.toString(); // before the source adds its own to q
    // The body is read as soon as it comes, not once the page is free to
    // show it.
    const res = this.source(q, snap).then((r) => {
      const text = r.text();
      text.catch(() => {});
      return { ok: r.ok, statusText: r.statusText, text: () => text };
    });
    return { key, res };
  }

  // refresh asks the server for the page to show; one request at a time,
  // and a change that comes meanwhile is fetched once it is answered.
  async refresh() {
    if (!this.source || (this.viaSocket && this.viaSocket())) {
      if (this.onQuery) this.onQuery();
      return;
    }
    if (!this.snap) return;
    if (this.busy) {
      this.dirty = true;
      return;
    }
    this.busy = true;
    try {
      do {
        this.dirty = false;
        const show = this.showName;
        const q = this.query(show);
        const pending = this.pending;
        this.pending = null;
        let html;
        try {
          const res = await (pending && pending.key === q.toString() ? pending.res : this.source(q, this.snap));
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

  // put swaps the server's page in and starts its clocks, which tick in
  // the page from the times the server gave.
  put(html, show) {
    const tpl = document.createElement('template');
    tpl.innerHTML = html;
    // A frame may bring the other parts without the table's page, which
    // did not change.
    if (this.onParts) this.onParts(tpl.content);
    const wrap = tpl.content.querySelector('.table-wrap');
    // Or only the table's counts, which a node joining past the page
    // moves (views.QueueTableMeta): put on the rows shown.
    const meta = tpl.content.querySelector('.table-meta');
    if (!wrap) {
      const shown = this.root.querySelector('.table-wrap');
      if (!meta || !shown) return;
      putMeta(shown, meta);
      this.pager(shown, '');
      return;
    }
    // The clocks are set before the rows are patched in, so that a row
    // whose clock reads the same is left alone; they stop at the page's
    // moment (data-clock-at), which tick looks for above them.
    const aside = document.createElement('div');
    const frozen = this.root.closest('[data-clock-at]');
    if (frozen) aside.dataset.clockAt = frozen.dataset.clockAt;
    aside.append(wrap);
    tick(wrap);
    // Rows are patched, keyed by node, not swapped: between two moments
    // of a scrub most rows are the same nodes.
    const live = this.root.querySelector('.table-wrap');
    morph(live, wrap);
    // Counts newer than the rows (Live shows the sections a socket
    // brought, each as new as its last change).
    if (meta) putMeta(live, meta);
    this.pager(live, show);
  }

  // pager says which page live, the table shown, is, and scrolls to the
  // row of show.
  pager(live, show) {
    this.page = Number(live.dataset.page);
    const pages = Number(live.dataset.pages);
    this.info.textContent = live.dataset.info;
    this.prev.disabled = this.page === 0;
    this.next.disabled = this.page >= pages - 1;
    if (this.onPage) this.onPage(this.page);
    const tr = show && live.querySelector(`tr[data-row="${CSS.escape(show)}"]`);
    if (tr) tr.scrollIntoView({ block: 'nearest' });
  }
}

// putMeta puts a table's counts (views.QueueTableMeta) on the table shown.
function putMeta(shown, meta) {
  for (const k of ['info', 'page', 'pages']) shown.dataset[k] = meta.dataset[k];
  const caption = shown.querySelector('caption');
  if (caption) caption.textContent = meta.dataset.caption;
}

function button(text, fn) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  b.addEventListener('click', fn);
  return b;
}
