// tz.js shows the pages' times in UTC (as the server words them) or in the
// browser's own time zone, as the reader picks with the #tz-toggle button;
// the choice is kept in localStorage, so every page and every incident file
// opened in this browser follows it. UTC is the default.
//
// Every time a page shows is worded "2006-01-02 15:04:05 UTC" (views.When,
// and timeline.js's copy of it): in text, in a title (tooltip) or in a
// range's aria-valuetext. In local mode each is rewritten in place, in
// whatever the server or a script puts in the page later too (a
// MutationObserver), and the UTC wording is kept to put back.

const KEY = 'zklockviz.timezone';
const RE = /(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) UTC/g;
const ATTRS = ['title', 'aria-valuetext'];

let local = false;
try {
  local = localStorage.getItem(KEY) === 'local';
} catch {
  // No storage (a locked-down browser): UTC, as the server says.
}

// zoneName is the browser's zone as a reader knows it ("CET", "GMT+5:30").
function zoneName(d) {
  const part = new Intl.DateTimeFormat('en-US', { timeZoneName: 'short' }).formatToParts(d).find((p) => p.type === 'timeZoneName');
  return part ? part.value : 'local';
}

const pad = (n) => String(n).padStart(2, '0');

// localWhen words a UTC moment in the browser's zone, as views.When does in UTC.
export function localWhen(ms) {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${zoneName(d)}`;
}

const toLocal = (s) => s.replace(RE, (_, y, mo, d, h, mi, se) => localWhen(Date.UTC(+y, +mo - 1, +d, +h, +mi, +se)));

// shown remembers, per text node and per element attribute, the UTC text
// and what this script wrote instead: a text a script changed since is UTC
// again, and is rewritten; one left as written is put back on the way to UTC.
const texts = new WeakMap(); // Text -> {utc, shown}
const attrs = new WeakMap(); // Element -> Map(attr -> {utc, shown})

function fixText(t) {
  const rec = texts.get(t);
  const utc = rec && t.data === rec.shown ? rec.utc : t.data;
  if (!local) {
    if (rec && t.data === rec.shown) t.data = rec.utc;
    texts.delete(t);
    return;
  }
  RE.lastIndex = 0;
  if (!RE.test(utc)) return;
  const shown = toLocal(utc);
  texts.set(t, { utc, shown });
  if (t.data !== shown) t.data = shown;
}

function fixAttr(el, name) {
  const v = el.getAttribute(name);
  if (v === null) return;
  let m = attrs.get(el);
  const rec = m && m.get(name);
  const utc = rec && v === rec.shown ? rec.utc : v;
  if (!local) {
    if (rec && v === rec.shown) el.setAttribute(name, rec.utc);
    if (m) m.delete(name);
    return;
  }
  RE.lastIndex = 0;
  if (!RE.test(utc)) return;
  const shown = toLocal(utc);
  if (!m) attrs.set(el, (m = new Map()));
  m.set(name, { utc, shown });
  if (v !== shown) el.setAttribute(name, shown);
}

// fix rewrites every time under root (a node) to the chosen zone.
function fix(root) {
  if (root.nodeType === Node.TEXT_NODE) {
    fixText(root);
    return;
  }
  if (root.nodeType !== Node.ELEMENT_NODE && root.nodeType !== Node.DOCUMENT_NODE) return;
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let t = walk.nextNode(); t; t = walk.nextNode()) fixText(t);
  const els = root.nodeType === Node.ELEMENT_NODE ? [root, ...root.querySelectorAll('[title], [aria-valuetext]')] : [...root.querySelectorAll('[title], [aria-valuetext]')];
  for (const el of els) for (const a of ATTRS) fixAttr(el, a);
}

const observer = new MutationObserver((records) => {
  for (const r of records) {
    if (r.type === 'childList') r.addedNodes.forEach(fix);
    else if (r.type === 'characterData') fixText(r.target);
    else fixAttr(r.target, r.attributeName);
  }
});

function label() {
  const b = document.getElementById('tz-toggle');
  if (!b) return;
  // The server words both (views.TimeZoneToggle): UTC as the button
  // comes, the zone's in its data-*.
  if (!b.dataset.utc) Object.assign(b.dataset, { utc: b.textContent, utcTitle: b.title });
  b.textContent = local ? b.dataset.local.replace('{zone}', zoneName(new Date())) : b.dataset.utc;
  b.setAttribute('aria-pressed', String(local));
  b.title = local ? b.dataset.localTitle : b.dataset.utcTitle;
  document.documentElement.dataset.timezone = local ? 'local' : 'utc';
}

// setZone picks UTC (false) or the browser's zone (true) for every time shown.
export function setZone(toLocalZone) {
  local = toLocalZone;
  try {
    if (local) localStorage.setItem(KEY, 'local');
    else localStorage.removeItem(KEY);
  } catch {
    // Not kept: this page still follows the choice.
  }
  if (local) observer.observe(document.documentElement, { childList: true, subtree: true, characterData: true, attributes: true, attributeFilter: ATTRS });
  fix(document);
  if (!local) observer.disconnect();
  label();
}

function start() {
  const b = document.getElementById('tz-toggle');
  if (b) b.addEventListener('click', () => setZone(!local));
  setZone(local);
}
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
