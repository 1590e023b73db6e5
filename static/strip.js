// strip.js is the strip chart over the lock view's time bar: the window's
// queue (holders and waiters stacked) and its longest wait (a line on its
// own scale) in the buckets GET /api/v1/lock/strip answers, alerts as ticks
// and gaps shaded. A click or a drag on it picks the moment under the
// pointer, as the time bar would.

import { when, axisTicks } from './timeline.js';
import { fmtDur, el, say } from './queue.js';

const H = 100; // the chart's height in viewBox units; bars use the bottom TOP of it
const TOP = 86; // the top 14 units hold the alert ticks

export class Strip {
  // svg: the chart; scale: where the scales are said. onScrub(t) is called
  // while a drag moves, onSeek(t) when the pointer is let go.
  constructor(svg, scale, { onSeek, onScrub }) {
    this.svg = svg;
    this.scale = scale;
    this.from = 0;
    this.to = 0;
    let down = false;
    svg.addEventListener('pointerdown', (e) => {
      if (e.button !== 0 || this.to <= this.from) return;
      down = true;
      svg.setPointerCapture(e.pointerId);
      onScrub(this.timeAt(e.clientX));
    });
    svg.addEventListener('pointermove', (e) => {
      if (down) onScrub(this.timeAt(e.clientX));
    });
    const up = (e) => {
      if (!down) return;
      down = false;
      onSeek(this.timeAt(e.clientX));
    };
    svg.addEventListener('pointerup', up);
    svg.addEventListener('pointercancel', () => (down = false));
  }

  // timeAt is the moment (ms epoch) under the pointer at clientX.
  timeAt(x) {
    const r = this.svg.getBoundingClientRect();
    const f = Math.min(1, Math.max(0, (x - r.left) / Math.max(1, r.width)));
    return Math.round(this.from + f * (this.to - this.from));
  }

  // draw replaces the chart with d, the strip's answer (null: none).
  draw(d) {
    this.d = d;
    const svg = this.svg;
    this.cursorLine = null;
    if (!d) {
      svg.replaceChildren();
      svg.dataset.buckets = '0';
      this.scale.textContent = '';
      return;
    }
    this.from = Date.parse(d.from);
    this.to = Date.parse(d.to);
    const n = d.buckets.length;
    const span = Math.max(1, this.to - this.from);
    const x = (t) => (n * (t - this.from)) / span;
    svg.setAttribute('viewBox', `0 0 ${n} ${H}`);
    const parts = [];
    for (const g of d.gaps || []) {
      const a = Math.max(0, x(Date.parse(g.from)));
      const b = Math.min(n, x(Date.parse(g.to)));
      if (b > a) parts.push(el('rect', { class: 'gap', x: a, y: 0, width: b - a, height: H }));
    }
    const top = Math.max(1, d.maxQueue);
    const wtop = d.maxWait > 0 ? d.maxWait : 1;
    const step = span / n;
    let line = '';
    d.buckets.forEach((b, i) => {
      const q = b.holders + b.waiters;
      if (q > 0) {
        const g = el('g', { class: 'bar' });
        g.dataset.queue = String(q);
        const hh = (TOP * b.holders) / top;
        const wh = (TOP * b.waiters) / top;
        if (b.holders) g.append(el('rect', { class: 'holders', x: i, y: H - hh, width: 1, height: hh }));
        if (b.waiters) g.append(el('rect', { class: 'waiters', x: i, y: H - hh - wh, width: 1, height: wh }));
        g.append(el('title', {}, say('strip.bucket', { at: when(this.from + i * step), holders: b.holders, waiters: b.waiters, wait: fmtDur(b.maxWait * 1000) })));
        parts.push(g);
      }
      line += `${i ? 'L' : 'M'}${i + 0.5},${(H - (TOP * b.maxWait) / wtop).toFixed(2)}`;
    });
    // A faint line over the bars at each round time the bar's axis would
    // label: the strip's time axis, in the zone shown.
    const width = svg.getBoundingClientRect().width;
    for (const { t } of axisTicks(this.from, this.to, Math.max(2, Math.floor(width / 90)))) {
      const g = el('line', { class: 'grid', x1: x(t), x2: x(t), y1: 0, y2: H });
      g.dataset.t = String(t);
      parts.push(g);
    }
    if (n) parts.push(el('path', { class: 'wait', d: line }));
    for (const a of d.alerts || []) {
      const t = Date.parse(a.time);
      const m = el('line', { class: 'alert' + (a.raised ? '' : ' cleared'), x1: x(t), x2: x(t), y1: 0, y2: H - TOP - 2 });
      m.append(el('title', {}, say(a.raised ? 'strip.alert' : 'strip.cleared', { at: when(t), alert: a.alert, message: a.message ? ' — ' + a.message : '' })));
      parts.push(m);
    }
    this.cursorLine = el('line', { class: 'cursor', y1: 0, y2: H, visibility: 'hidden' });
    parts.push(this.cursorLine);
    svg.replaceChildren(...parts);
    svg.dataset.buckets = String(n);
    svg.dataset.from = String(this.from);
    svg.dataset.to = String(this.to);
    svg.dataset.maxQueue = String(d.maxQueue);
    svg.dataset.maxWait = String(d.maxWait);
    this.scale.textContent = say('strip.scale', { queue: d.maxQueue, wait: fmtDur(d.maxWait * 1000) });
    this.cursor(this.at ?? null);
  }

  // redraw draws the last answer again: the zone shown changed.
  redraw() {
    if (this.d !== undefined) this.draw(this.d);
  }

  // cursor marks the moment shown (null: live, no mark).
  cursor(t) {
    this.at = t;
    const c = this.cursorLine;
    if (!c) return;
    if (t === null || t < this.from || t > this.to) {
      c.setAttribute('visibility', 'hidden');
      return;
    }
    const v = ((this.svg.viewBox.baseVal.width || 1) * (t - this.from)) / Math.max(1, this.to - this.from);
    c.setAttribute('x1', String(v));
    c.setAttribute('x2', String(v));
    c.setAttribute('visibility', 'visible');
  }
}
