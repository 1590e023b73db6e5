// timebar.js is the lock view's time bar: the lock as it was. The history's
// events of the window mark the bar (timeline.js, the classroom's timeline);
// picking a moment shows the lock as the history rebuilds it then (GET
// /parts/lock-at: the snapshot GET /api/v1/lock?at= answers) with the
// server's parts for it. The strip chart over the bar (strip.js) and the
// figures under it follow the same window.

import { say } from './queue.js';
import { lockQuery } from './live.js';
import { Timeline, timelineKeys, when, drawAxis, hoverTime, dragSpan, axisTimeAt } from './timeline.js';
import { Strip } from './strip.js';

// The window is known to the bar as a density, from the server: how many
// moments lie in each of BUCKETS equal stretches. Its moments are listed a
// page at a time, the page the server picks around the moment shown (GET
// /api/v1/lock/history/moments?around=: whole buckets, about 2,000 moments),
// so a day of changes (past what one answer of the history lists) is as
// quick to open and move through as an hour. How the buckets lie is the
// server's to know: the bar draws their counts and asks for pages by time.
const BUCKETS = 600;
const MARKS = 400; // a page with more moments shows the density alone
const STRIP_BUCKETS = 120;
// A zoom spans MIN_ZOOM ms at least, widened about its middle: narrower,
// the axis would have no second to mark.
const MIN_ZOOM = 1000;
// While live, the figures follow the changes on a timer, not per change:
// every FIGURES_EVERY, the window up to now is read again if the lock
// changed since the last read (the history has recorded what a viewer has
// seen before it answers), so a busy lock with many viewers costs each
// viewer one request every FIGURES_EVERY at most.
const FIGURES_EVERY = 5000;
// While live, the bar gains the changes recorded since, every RELOAD_EVERY.
const RELOAD_EVERY = 15000;

const byId = (id) => document.getElementById(id);
// covers says whether the page p ([from, to) in ms, or null) holds t. A
// page at an end of the window (first, last) holds the times past that end
// too: the server's page around them is that page.
const covers = (p, t) => p !== null && (t >= p.from || p.first) && (t < p.to || p.last);

// momentText tells a moment's changes: each kind with its count, then the
// nodes they name (the first few, and how many more).
function momentText(m) {
  const kinds = m.kinds.map((k) => (k.count > 1 ? say('bar.kindCount', { kind: k.kind, count: k.count.toLocaleString('en-US') }) : k.kind)).join(', ');
  const nodes = m.nodes || [];
  if (!nodes.length) return kinds;
  return say('bar.kindsNodes', { kinds, nodes: nodes.join(', '), more: m.changes > nodes.length ? say('bar.more') : '' });
}

// fetchMoment is the lock at a past moment with its parts (GET
// /parts/lock-at?parts=1): snap, null when the server has none to give, and
// the answer's HTML, the parts after the snapshot's JSON element.
async function fetchMoment(q, query) {
  const res = await fetch('/parts/lock-at?' + lockQuery(q, query));
  const html = res.ok ? await res.text() : '';
  const open = html.indexOf('>') + 1;
  const end = html.indexOf('</script>');
  const answer = res.ok && end > open ? JSON.parse(html.slice(open, end)) : {};
  const snap = answer.snapshot || null;
  // A long queue's moment comes as the window its lane draws.
  if (snap && answer.window) snap.window = answer.window;
  return { snap, html, status: res.status, statusText: res.statusText };
}

// TimeBar runs the bar in the element bar for the lock page, its host:
//   host.query: the lock's query (views.LockQuery); host.path its path
//   host.at: the past moment shown (ms epoch), null when live; the bar sets it
//   host.selected(): the selected node
//   host.table: the page's QueueTable; host.withMoment, while the bar asks
//     the table for a moment's page, fetches it inside the moment's answer
//   host.historyOff(): whether the server says the history is off
//   host.setParam(k, v): names v as the page's ?k=
//   host.draw(snap, page): draws a past moment's snapshot and table page
//   host.drawLive(): draws the newest live snapshot again
export class TimeBar {
  constructor(bar, host) {
    this.bar = bar;
    this.host = host;
    this.ui = {
      back: byId('tb-back'), play: byId('tb-play'), step: byId('tb-step'), live: byId('tb-live'),
      win: byId('tb-window'), info: byId('tb-info'), exp: byId('export'), zoomOut: byId('tb-zoom-out'),
    };
    this.win = { from: 0, to: 0 };
    this.counts = [];
    this.total = 0;
    this.first = null;
    this.last = null;
    // seen: the lock's first sight when it is in the window (the read that
    // began its history): no moment, as it restates what was there, but
    // where the history starts, so Home and ← reach it.
    this.seen = null;
    this.gaps = [];
    // page: the page listed, as the server answered it: [from, to) in ms
    // (to past the window's end when it has the last bucket), how many
    // moments come before it, and whether it is the window's first, last.
    this.page = null;
    this.pageAsk = null; // the page being asked for: want, the newest t; done
    this.moments = []; // the distinct times of the page's events, ms, ascending
    this.playing = null;
    // zoom is the span (ms) a drag across the times zoomed the bar to, null
    // for the window picked: the bar, the strip and the figures cover it
    // until zoomed out, Live or another window.
    this.zoom = null;
    this.fetching = false;
    this.scrubTo = null;
    this.figuresStale = false;
    this.figuresBusy = false;
    this.wireBar();
    this.wireButtons();
    this.start();
  }

  get at() {
    return this.host.at;
  }
  set at(v) {
    this.host.at = v;
  }

  // wireBar sets up the bar, the strip over it and the times under it.
  wireBar() {
    const seek = (t) => this.seek(t);
    const scrub = (t) => this.scrub(t);
    this.timeline = new Timeline(byId('tb-scrub'), byId('tb-ticks'), { onSeek: seek, onScrub: scrub });
    // The strip chart over the bar picks moments as the bar does.
    this.strip = new Strip(byId('strip-chart'), byId('strip-scale'), { onSeek: seek, onScrub: scrub });
    // The bar's time axis, and the time under the pointer over the bar and
    // the strip; both follow the zone the reader picked.
    this.axis = byId('tb-axis');
    hoverTime(this.timeline.input, byId('tb-hover'), (x) => this.timeline.valueAt(x));
    hoverTime(this.strip.svg, byId('strip-hover'), (x) => (this.strip.to > this.strip.from ? this.strip.timeAt(x) : null));
    new MutationObserver(() => {
      this.drawAxis();
      this.strip.redraw();
    }).observe(document.documentElement, { attributes: true, attributeFilter: ['data-timezone'] });
    // A drag across the times under the bar zooms the bar, the strip and
    // the figures to the span; double-click, the zoom out button or Z go
    // back to the window picked.
    const zoomBack = () => this.zoom && this.zoomTo(null);
    dragSpan(this.axis, byId('tb-zoom-band'), (from, to) => this.zoomTo({ from, to }));
    // The time under the pointer over the times too, where a drag begins and ends.
    hoverTime(this.axis, byId('tb-hover'), (x) => axisTimeAt(this.axis, x));
    this.axis.addEventListener('dblclick', zoomBack);
    this.ui.zoomOut.addEventListener('click', zoomBack);
    this.ui.win.addEventListener('change', () => this.zoomTo(null));
    const goLive = () => this.goLive();
    timelineKeys({
      back: () => this.stepBack(), step: () => this.stepFwd(),
      first: () => (this.seen ?? this.first) !== null && this.seek(this.seen ?? this.first), last: () => this.last !== null && this.seek(this.last),
      extra: { l: goLive, L: goLive, z: zoomBack, Z: zoomBack },
    });
  }

  wireButtons() {
    const { ui } = this;
    ui.play.addEventListener('click', () => {
      if (this.playing) this.stop();
      else this.playing = setInterval(() => this.stepFwd(), 1000);
      this.syncBar();
    });
    ui.back.addEventListener('click', () => this.stepBack());
    ui.step.addEventListener('click', () => this.stepFwd());
    ui.live.addEventListener('click', () => this.goLive());
  }

  // start reads the window, the figures when the page came with a place
  // for them, and keeps the live bar and figures current.
  start() {
    // The page comes with a place for its figures, not the figures: they
    // are read from the history once the queue is shown.
    const pending = document.querySelector('#figures[data-pending]');
    if (pending) {
      this.showFigures(Number(pending.dataset.from), Number(pending.dataset.to), true).catch(() => {
        // The next change, or the window's, fetches them again.
      });
    }
    // A moment the server could not read (the history's database gone) is
    // not asked for again (a 503) until the history records again: the
    // replay status says why.
    this.load().then(() => {
      if (this.at === null) return;
      const off = document.querySelector('#replay-status[data-off]');
      if (off) this.ui.info.textContent = say('bar.off', { at: when(this.at), off: off.dataset.off });
      else this.seek(this.at);
    });
    setInterval(() => this.refreshFigures(), FIGURES_EVERY);
    setInterval(() => {
      if (this.at === null && !this.playing && !document.hidden) this.load();
    }, RELOAD_EVERY);
  }

  // liveChanged is told of every live snapshot: the figures are read again
  // at the next FIGURES_EVERY.
  liveChanged() {
    this.figuresStale = true;
  }

  // historyBack is told when the history records again: the bar and the
  // figures (or the moment shown) are read again.
  historyBack() {
    const loaded = this.load();
    const to = Date.now();
    if (this.at === null) this.showFigures(to - Number(this.ui.win.value), to);
    else loaded.then(() => this.seek(this.at));
  }

  async refreshFigures() {
    if (!this.figuresStale || this.figuresBusy || this.at !== null || this.zoom || document.hidden || !byId('figures')) return;
    this.figuresStale = false;
    this.figuresBusy = true;
    try {
      const to = Date.now();
      await this.showFigures(to - Number(this.ui.win.value), to);
    } catch {
      this.figuresStale = true; // the next tick tries again
    } finally {
      this.figuresBusy = false;
    }
  }

  // A drag moves the bar many times a frame: its moves are taken once a
  // frame, the newest winning (and seek keeps one request under way).
  scrub(t) {
    if (this.scrubTo === null) {
      requestAnimationFrame(() => {
        const v = Math.round(this.scrubTo);
        this.scrubTo = null;
        if (v !== this.at) this.seek(v);
      });
    }
    this.scrubTo = t;
  }

  drawAxis() {
    if (this.win.to > this.win.from) drawAxis(this.axis, this.win.from, this.win.to);
  }

  // load reads the window's density around the moment shown (or up to
  // now) and lists the page of that moment.
  async load() {
    if (this.host.historyOff()) return;
    const { ui, bar, zoom, at } = this;
    const span = Number(ui.win.value);
    const now = Date.now();
    const to = zoom ? zoom.to : at === null ? now : Math.min(now, at + span / 2);
    const from = zoom ? zoom.from : to - span;
    const q = new URLSearchParams({ from: String(from), to: String(to), buckets: String(BUCKETS) });
    const qs = new URLSearchParams({ from: String(from), to: String(to), n: String(STRIP_BUCKETS) });
    // Live, the bar starts where the lock's history does when that is
    // inside the window (the server says where: the density's from).
    if (at === null && !zoom) for (const p of [q, qs]) p.set('fit', 'history');
    const stripRes = fetch('/api/v1/lock/strip?' + lockQuery(qs, this.host.query))
      .then((r) => (r.ok ? r.json() : null))
      .catch(() => null);
    const res = await fetch('/api/v1/lock/history/density?' + lockQuery(q, this.host.query));
    if (!res.ok) {
      ui.info.textContent = say('bar.noHistory', { status: `${res.status} ${res.statusText}` });
      return;
    }
    this.density(await res.json(), from, to);
    this.strip.draw(await stripRes);
    this.page = null;
    this.pageAsk = null;
    this.moments = [];
    await this.ensurePage(this.here());
    bar.dataset.moments = String(this.total);
    bar.dataset.gaps = String(this.gaps.length);
    bar.dataset.span = String(span);
    bar.dataset.zoom = this.zoom ? `${this.zoom.from}-${this.zoom.to}` : '';
    ui.zoomOut.hidden = !this.zoom;
    const q2 = new URLSearchParams({ from: String(from), to: String(to) });
    ui.exp.href = '/api/v1/lock/export?' + lockQuery(q2, this.host.query);
    this.syncBar();
  }

  // density takes the server's density d of [from, to] and draws it.
  density(d, from, to) {
    this.win = { from: Date.parse(d.from) || from, to };
    this.counts = d.counts || [];
    this.total = d.moments || 0;
    this.first = d.first ? Date.parse(d.first) : null;
    this.last = d.last ? Date.parse(d.last) : null;
    this.seen = d.seen ? Date.parse(d.seen) : null;
    this.gaps = (d.gaps || []).map((g) => ({
      from: Date.parse(g.from), to: Date.parse(g.to),
      title: say('bar.gap', { from: when(Date.parse(g.from)), to: when(Date.parse(g.to)), why: g.why || say('bar.gapWhy') }),
    }));
    const at = this.at;
    this.timeline.set({ min: this.win.from, max: to, value: at === null ? to : at, text: at === null ? 'live' : when(at) });
    this.timeline.density(this.counts);
    this.drawAxis();
  }

  // ensurePage lists the page around t, unless it is listed. Where a page
  // begins and ends is the server's answer, so one page is asked for at a
  // time: a t asked for meanwhile is asked for once that page is in, unless
  // it holds t (the newest t wins, as seek's moments do).
  ensurePage(t) {
    if (!this.counts.length || covers(this.page, t) || this.host.historyOff()) return Promise.resolve();
    if (this.pageAsk) {
      this.pageAsk.want = t;
      return this.pageAsk.done;
    }
    const ask = { want: t };
    this.pageAsk = ask;
    ask.done = this.askPages(ask);
    return ask.done;
  }

  async askPages(ask) {
    try {
      let t;
      do {
        t = ask.want;
        const h = await this.fetchPage(t);
        // A new window came meanwhile; or, without h, t is asked for
        // again at the next move.
        if (this.pageAsk !== ask || !h) return;
        this.showPage(h);
      } while (ask.want !== t && !covers(this.page, ask.want));
    } finally {
      if (this.pageAsk === ask) this.pageAsk = null;
    }
  }

  // fetchPage is the server's page of the window's moments around t, each
  // told in counts and a few names: a moment of 100,000 changes (a big
  // queue's watch table read once) is not 100,000 events to fetch and
  // parse. null when there is none to have.
  async fetchPage(t) {
    const { win } = this;
    const q = new URLSearchParams({ from: String(win.from), to: String(win.to), buckets: String(BUCKETS), around: String(t) });
    try {
      const res = await fetch('/api/v1/lock/history/moments?' + lockQuery(q, this.host.query));
      return res.ok ? await res.json() : null;
    } catch {
      return null;
    }
  }

  // showPage takes the server's page h and marks its moments. It words the
  // moment shown, now that it can count it, but asks for no page, as
  // syncBar would for the moment shown: a step past the page (nearMoment)
  // is still waiting for this one.
  showPage(h) {
    const from = Date.parse(h.page.from);
    const to = Date.parse(h.page.to);
    this.page = { from, to, before: h.page.before, first: from <= this.win.from, last: to > this.win.to };
    this.drawMarks(h.moments || []);
    this.timeline.current(this.at);
    this.bar.dataset.page = `${from}-${to}`;
    this.sayAt();
  }

  // drawMarks marks the listed page's moments on the bar (none past MARKS),
  // and the first sight.
  drawMarks(listed) {
    const { at, seen } = this;
    this.moments = listed.map((m) => Date.parse(m.time));
    const marks =
      this.moments.length > MARKS
        ? []
        : listed.map((m, i) => {
            const t = this.moments[i];
            return {
              value: t,
              cls: 'k-' + String(m.kinds[0].kind).replace(/[^a-z]/g, '') + (t === at ? ' current' : ''),
              title: say('bar.moment', { at: when(t), changes: momentText(m) }),
              data: { at: String(t) },
            };
          });
    if (seen !== null) marks.push({ value: seen, cls: 'k-seen' + (seen === at ? ' current' : ''), title: say('bar.seenMark', { at: when(seen) }), data: { seen: String(seen) } });
    this.timeline.draw(marks, this.gaps);
  }

  syncBar() {
    const { at, ui, bar } = this;
    const body = document.body;
    bar.dataset.at = at === null ? '' : String(at);
    body.dataset.at = bar.dataset.at;
    if (at === null) delete body.dataset.clockAt;
    else body.dataset.clockAt = String(at);
    ui.live.setAttribute('aria-pressed', String(at === null));
    ui.play.textContent = this.playing ? '❚❚ pause' : '▶ play';
    this.sayAt();
    this.timeline.input.value = String(at === null ? this.win.to : at);
    this.timeline.current(at);
    this.strip.cursor(at);
    if (at !== null) this.ensurePage(at);
  }

  // sayAt words the moment shown: how many of the window's changes are up
  // to it once its page is listed (… until then).
  sayAt() {
    const { at, ui, total } = this;
    const n = at === null ? null : this.countTo(at);
    if (at === null) ui.info.textContent = say('bar.live', { total });
    else if (at === this.seen && n === 0) ui.info.textContent = say('bar.seen', { at: when(at), total });
    else ui.info.textContent = say('bar.at', { at: when(at), n: n ?? '…', total });
  }

  // seek shows the lock as it was at t. While a drag moves the bar faster
  // than the server answers, one request is under way at a time and the
  // newest moment is fetched when it is answered. The address names the
  // moment once its request is on its way: replacing it costs the browser
  // milliseconds the request need not wait for.
  seek(t) {
    this.at = Math.round(t);
    this.syncBar();
    const drawn = this.fetching ? Promise.resolve() : this.fetchAndDraw();
    this.host.setParam('at', String(this.at));
    return drawn;
  }

  // fetchAndDraw fetches and draws the moment shown, again while a newer
  // one came meanwhile.
  async fetchAndDraw() {
    this.fetching = true;
    try {
      let want;
      do {
        want = this.at;
        const { page, moment } = this.askMoment(want);
        const m = await moment;
        // A moment the history does not know: its state unknown.
        const next = m.snap || { path: this.host.path, nodes: [], alerts: [], connection: '', parent: { is: 'unknown' } };
        // Drawn together, the lane and the table cost the browser one
        // style, layout and paint, not one each: the table's text is
        // awaited too, or the table would be patched a task later, after
        // a frame of the lane alone.
        await page.res.then((r) => r.text()).catch(() => {});
        if (this.at === null) return; // Live came meanwhile
        if (this.at !== want) continue;
        this.host.draw(next, page);
      } while (this.at !== null && this.at !== want);
    } finally {
      this.fetching = false;
    }
  }

  // askMoment asks for the moment want and the table's page of it: one
  // answer (GET /parts/lock-at?parts=1), so one request a frame, and the
  // server rebuilds the moment once.
  askMoment(want) {
    const { host } = this;
    let moment = null;
    host.withMoment = (q) => {
      q.set('parts', '1');
      moment = fetchMoment(q, host.query);
      return moment.then((m) => new Response(m.html, { status: m.status, statusText: m.statusText, headers: { 'Content-Type': 'text/html; charset=utf-8' } }));
    };
    let page;
    try {
      page = host.table.request(host.selected());
    } finally {
      host.withMoment = null;
    }
    return { page, moment: moment || fetchMoment(new URLSearchParams({ at: String(want), parts: '1' }), host.query) };
  }

  goLive() {
    this.stop();
    this.at = null;
    this.zoom = null;
    this.host.setParam('at', '');
    this.syncBar();
    this.host.drawLive();
    this.load();
  }

  // below is how many of the page's moments are before t (or at it, with
  // at set).
  below(t, orAt = false) {
    const { moments } = this;
    let lo = 0;
    let hi = moments.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (moments[mid] < t || (orAt && moments[mid] === t)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  // countTo is how many of the window's moments are at or before t: those
  // before the listed page (the server counts them) and the page's own;
  // null until t's page is listed.
  countTo(t) {
    return covers(this.page, t) ? this.page.before + this.below(t, true) : null;
  }

  here() {
    return this.at === null ? this.win.to : this.at;
  }

  // nearMoment is the window's first moment after t (dir 1) or its last
  // before t (dir -1), listing the pages on the way. The page past the
  // listed one is asked for around the first time out of it (page.to, or
  // page.from - 1), not by a parameter that skips empty buckets: the
  // server's page around a stretch without moments grows over it to the
  // moments beyond while they fit, and when they do not, the page asked for
  // next holds them. So a step asks twice at most per page it passes (the
  // second ask rare), and there is one way to ask for a page.
  async nearMoment(t, dir) {
    await this.ensurePage(t);
    for (;;) {
      const { moments, page } = this;
      const k = dir > 0 ? this.below(t, true) : this.below(t) - 1;
      if (k >= 0 && k < moments.length) return moments[k];
      if (page === null || (dir > 0 ? page.last : page.first)) return undefined;
      const next = dir > 0 ? page.to : page.from - 1;
      await this.ensurePage(next);
      // Not listed: the server did not answer, or a newer page was asked for.
      if (!covers(this.page, next)) return undefined;
    }
  }

  async stepFwd() {
    const t = await this.nearMoment(this.here(), 1);
    if (t !== undefined) this.seek(t);
    else this.goLive();
  }

  // Before the window's first moment, ← goes to the first sight.
  async stepBack() {
    const t = await this.nearMoment(this.here(), -1);
    if (t !== undefined) this.seek(t);
    else if (this.seen !== null && this.seen < this.here()) this.seek(this.seen);
  }

  stop() {
    clearInterval(this.playing);
    this.playing = null;
  }

  // showFigures replaces the figures with the server's for [from, to];
  // always: even while the summary says the history is off (its figures
  // are still read, and the part says when they cannot be).
  async showFigures(from, to, always = false) {
    if (!always && this.host.historyOff()) return;
    const q = new URLSearchParams({ from: String(from), to: String(to) });
    // The cluster the page was opened on, if it names one (a lock recorded
    // on more than one).
    const cluster = new URLSearchParams(location.search).get('cluster');
    if (cluster) q.set('cluster', cluster);
    const res = await fetch('/parts/lock-figures?' + lockQuery(q, this.host.query));
    if (!res.ok) return;
    const tpl = document.createElement('template');
    tpl.innerHTML = await res.text();
    const f = tpl.content.getElementById('figures');
    const shown = byId('figures');
    // A page first painted while the history could not be read has no
    // figures: they come after the time bar, where the server puts them.
    if (f && shown) shown.replaceWith(f);
    else if (f) this.bar.after(f);
  }

  async zoomTo(span) {
    if (span && span.to - span.from < MIN_ZOOM) {
      const mid = Math.round((span.from + span.to) / 2);
      span = { from: mid - MIN_ZOOM / 2, to: mid + MIN_ZOOM / 2 };
    }
    this.zoom = span;
    await this.load();
    await this.showFigures(this.win.from, this.win.to);
  }
}
