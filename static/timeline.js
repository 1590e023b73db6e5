// timeline.js is the one timeline the pages share: a range slider over
// positions (the classroom's steps, the lock view's recorded moments), with
// marks for what happened where and shaded gaps where nothing is known. The
// page owns what a position means; the timeline only says where to go.

import { localWhen } from './tz.js';

// when words a moment (ms epoch) for the time bar as views.When does: UTC to
// the second. The browser keeps this copy because the bar's label follows a
// drag between moments the server never saw; e2e's TestWhenMatchesServer
// holds it to the Go function.
export function when(ms) {
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

// ---- A time axis: round times along a window, in the zone shown -----------

// The steps an axis picks from, in ms: the first that keeps the ticks few.
const STEPS = [1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5];

// localZone says whether the page shows the browser's zone, not UTC (the
// reader's pick, which tz.js keeps on the root element).
const localZone = () => document.documentElement.dataset.timezone === 'local';

// clock words ms as a tick's label, cut from the page's one wording of a
// time (when, or tz.js's localWhen in the zone shown): hours and minutes,
// and seconds when the step is under a minute; the date at a midnight.
function clock(ms, step) {
  const full = localZone() ? localWhen(ms) : when(ms); // "2006-01-02 15:04:05 …"
  if (full.slice(11, 19) === '00:00:00') return full.slice(5, 10);
  return full.slice(11, step < 6e4 ? 19 : 16);
}

// axisTicks are the round times of [from, to] (ms) to label, at most about
// most of them: each {t, label}, round in the zone shown.
export function axisTicks(from, to, most = 8) {
  const span = to - from;
  if (!(span > 0) || most < 1) return [];
  const day = STEPS[STEPS.length - 1];
  const step = STEPS.find((s) => span / s <= most) || day * Math.ceil(span / most / day);
  const off = localZone() ? -new Date(from).getTimezoneOffset() * 6e4 : 0;
  const out = [];
  for (let t = Math.ceil((from + off) / step) * step - off; t <= to; t += step) out.push({ t, label: clock(t, step) });
  return out;
}

// drawAxis labels el, a strip as wide as the window [from, to], with its
// round times, one about every 90 px; each label's title is the whole time.
export function drawAxis(el, from, to) {
  const width = el.getBoundingClientRect().width;
  const ticks = axisTicks(from, to, Math.max(2, Math.floor(width / 90)));
  el.replaceChildren(
    ...ticks.map(({ t, label }) => {
      const s = document.createElement('span');
      s.className = 'tick';
      s.style.left = `${(100 * (t - from)) / (to - from)}%`;
      s.textContent = label;
      s.title = when(t);
      s.dataset.t = String(t);
      return s;
    }),
  );
  el.dataset.from = String(from);
  el.dataset.to = String(to);
}

// hoverTime shows, in out, the time under the pointer while it is over
// el: timeAt(clientX) is that time (null: none), placed at the pointer
// within out's positioned parent.
export function hoverTime(el, out, timeAt) {
  el.addEventListener('pointermove', (e) => {
    const t = timeAt(e.clientX);
    if (t === null) {
      out.hidden = true;
      return;
    }
    const box = out.parentElement.getBoundingClientRect();
    out.textContent = when(t);
    out.dataset.t = String(t);
    out.style.left = `${e.clientX - box.left}px`;
    out.hidden = false;
  });
  el.addEventListener('pointerleave', () => {
    out.hidden = true;
  });
}

// axisTimeAt is the time under clientX along el, an axis drawAxis drew
// (null before it has a window).
export function axisTimeAt(el, x) {
  const r = el.getBoundingClientRect();
  const from = Number(el.dataset.from);
  const to = Number(el.dataset.to);
  if (!(to > from)) return null;
  const f = Math.min(1, Math.max(0, (x - r.left) / Math.max(1, r.width)));
  return Math.round(from + f * (to - from));
}

// MIN_DRAG is how far, in px, the pointer must move for a press on an axis
// to be a drag across a span: less is a click, or a hand that shook.
const MIN_DRAG = 4;

// dragSpan lets a drag across el, a strip as wide as the window [from, to]
// (drawAxis's dataset), pick a span of it: band, an element in el's
// positioned parent, shades the span while the drag lasts, and onSpan(a, b)
// (ms, a < b) is called when the pointer is let go. The axis is where a
// drag means this: the bar and the strip above it already take a drag as
// a scrub to a moment.
export function dragSpan(el, band, onSpan) {
  let start = null; // {x, t} where the drag began
  const timeAt = (x) => axisTimeAt(el, x);
  const shade = (x) => {
    const box = band.parentElement.getBoundingClientRect();
    const r = el.getBoundingClientRect();
    const a = Math.max(r.left, Math.min(start.x, x));
    const b = Math.min(r.right, Math.max(start.x, x));
    band.style.left = `${a - box.left}px`;
    band.style.width = `${b - a}px`;
    band.hidden = b - a < MIN_DRAG;
  };
  el.addEventListener('pointerdown', (e) => {
    const t = timeAt(e.clientX);
    if (e.button !== 0 || t === null) return;
    e.preventDefault(); // no text selection across the labels
    start = { x: e.clientX, t };
    el.setPointerCapture(e.pointerId);
  });
  el.addEventListener('pointermove', (e) => {
    if (start) shade(e.clientX);
  });
  el.addEventListener('pointerup', (e) => {
    if (!start) return;
    const s = start;
    start = null;
    band.hidden = true;
    if (Math.abs(e.clientX - s.x) < MIN_DRAG) return;
    const t = timeAt(e.clientX);
    if (t !== null && t !== s.t) onSpan(Math.min(s.t, t), Math.max(s.t, t));
  });
  el.addEventListener('pointercancel', () => {
    start = null;
    band.hidden = true;
  });
}

// THUMB is half the range's thumb, in px: where the marks and the axis
// start and end (.ticks and .axis have that margin).
const THUMB = 8;

export class Timeline {
  // input: an <input type=range>; ticks: the element the marks go in.
  // onSeek(value) is called when the user picks a position; onScrub(value)
  // while a drag moves it (by default nothing: the classroom's steps run on
  // ZooKeeper and are taken when the drag ends).
  constructor(input, ticks, { onSeek = () => {}, onScrub = null } = {}) {
    this.input = input;
    this.ticks = ticks;
    this.onSeek = onSeek;
    this.min = 0;
    this.max = 0;
    input.addEventListener('change', () => this.onSeek(Number(input.value)));
    if (onScrub) input.addEventListener('input', () => onScrub(Number(input.value)));
  }

  // set places the slider: its range, where it is and how a reader says it.
  set({ min = 0, max, value, text = '' }) {
    this.min = min;
    this.max = max;
    this.input.min = String(min);
    this.input.max = String(max);
    this.input.value = String(value);
    if (text) this.input.setAttribute('aria-valuetext', text);
  }

  // valueAt is the value under clientX along the bar: the thumb's centre
  // runs from THUMB px in from either end. null while the bar is empty.
  valueAt(x) {
    if (!(this.max > this.min)) return null;
    const r = this.input.getBoundingClientRect();
    const f = Math.min(1, Math.max(0, (x - r.left - THUMB) / Math.max(1, r.width - 2 * THUMB)));
    return Math.round(this.min + f * (this.max - this.min));
  }

  // pos is where value sits along the bar, in percent.
  pos(value) {
    const span = this.max - this.min;
    return span > 0 ? (100 * (value - this.min)) / span : 0;
  }

  // draw replaces the marks and gaps. A mark is {value, cls, title, data};
  // a gap is {from, to, title}. Marks are buttons that seek to their value.
  draw(marks, gaps = []) {
    this.ticks.replaceChildren(...(this.shape ? [this.shape] : []));
    this.buttons = new Map();
    this.shown = null;
    for (const g of gaps) {
      const d = document.createElement('div');
      d.className = 'gap';
      const from = Math.max(this.min, g.from);
      const to = Math.min(this.max, g.to);
      d.style.left = `${this.pos(from)}%`;
      d.style.width = `${Math.max(0.5, this.pos(to) - this.pos(from))}%`;
      d.title = g.title || '';
      this.ticks.append(d);
    }
    for (const m of marks) {
      const b = document.createElement('button');
      b.type = 'button';
      b.tabIndex = -1;
      b.className = m.cls || '';
      b.style.left = `${this.pos(m.value)}%`;
      b.title = m.title || '';
      for (const [k, v] of Object.entries(m.data || {})) b.dataset[k] = v;
      b.addEventListener('click', () => this.onSeek(m.value));
      this.ticks.append(b);
      this.buttons.set(m.value, b);
      if (b.classList.contains('current')) this.shown = b;
    }
  }

  // density draws, under the marks, how many moments lie along the bar:
  // counts[i] in the i-th of counts.length equal stretches, as one SVG path
  // drawn once per window, for a window with too many moments to mark one
  // by one (a scrub then moves only the slider over it).
  density(counts) {
    if (!this.shape) {
      const ns = 'http://www.w3.org/2000/svg';
      this.shape = document.createElementNS(ns, 'svg');
      this.shape.setAttribute('class', 'density');
      this.shape.setAttribute('preserveAspectRatio', 'none');
      this.shape.append(document.createElementNS(ns, 'path'));
      this.ticks.prepend(this.shape);
    }
    const top = counts.reduce((a, b) => Math.max(a, b), 0);
    let d = '';
    counts.forEach((c, i) => {
      if (c > 0) d += `M${i},1V${(1 - (0.2 + (0.8 * c) / top)).toFixed(3)}H${i + 1}V1z`;
    });
    this.shape.setAttribute('viewBox', `0 0 ${Math.max(1, counts.length)} 1`);
    this.shape.firstChild.setAttribute('d', d);
    this.shape.dataset.buckets = String(counts.length);
  }

  // current marks the mark at value (none for null) as the one shown,
  // touching only the marks that change: a scrub calls it every frame.
  current(value) {
    const b = (this.buttons && this.buttons.get(value)) || null;
    if (b === this.shown) return;
    if (this.shown) this.shown.classList.remove('current');
    if (b) b.classList.add('current');
    this.shown = b;
  }
}

// timelineKeys is the timeline's keyboard, the same on every page: ← and →
// step, Home and End go to the ends; a page adds its own keys in extra. It
// leaves typing alone, and returns the handler for a page that must add it
// elsewhere.
export function timelineKeys({ back, step, first, last, extra = {} }, skip = () => false) {
  const handler = (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    const typing = t && (t.tagName === 'SELECT' || t.tagName === 'TEXTAREA' || (t.tagName === 'INPUT' && !['range', 'checkbox'].includes(t.type)) || t.isContentEditable);
    if (typing || skip(e)) return;
    const fn = { ArrowLeft: back, ArrowRight: step, Home: first, End: last, ...extra }[e.key];
    if (!fn) return;
    // The arrows would also move the focused slider: the shortcut replaces that.
    e.preventDefault();
    fn(e);
  };
  document.addEventListener('keydown', handler);
  return handler;
}
