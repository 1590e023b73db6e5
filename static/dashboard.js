// dashboard.js keeps the dashboard current: it fetches the server's own
// rendering of the changing part (GET /parts/dashboard, the same templ
// component as the first paint) and swaps it in, so every label is the
// server's. It also sends the watch form and applies the list's controls:
// the service filter, the search, state, order, page size and page. Which
// page of which locks lives in the URL (GET /api/v1/locks's parameters),
// so a refresh, a reload and a shared link show the same page; the server
// renders only that page, whatever the number of locks. Its few sentences
// are the server's too (views.Phrases, said by queue.js's say).

import { say } from './queue.js';

const live = document.getElementById('dash-live');
const form = document.getElementById('watch-form');
const msg = document.getElementById('watch-msg');
const filter = document.getElementById('filter-service');
const controls = document.getElementById('service-filter');
const search = document.getElementById('lock-q');
let failures = 0;
let timer = null;
// seq numbers the refreshes: an answer older than one already shown (a
// slow one for the previous search) is dropped.
let seq = 0;
let shown = 0;

// The list's parameters and their defaults, which the URL leaves out: the
// server's (views.Dashboard.ListDefaults), on the form.
const defaults = JSON.parse(controls.dataset.defaults);

// listParams are the list's parameters as the URL has them.
function listParams() {
  const now = new URLSearchParams(location.search);
  const out = new URLSearchParams();
  for (const k of [...Object.keys(defaults), 'cursor']) {
    const v = now.get(k);
    if (v) out.set(k, v);
  }
  return out;
}

function partURL() {
  const u = new URL('/parts/dashboard', location.href);
  u.search = listParams().toString();
  return u;
}

// ensemble is the first service's line: ZooKeeper's when this server reads
// ZooKeeper, else the first other service's.
function ensemble() {
  return document.getElementById('ensemble') || document.querySelector('#services .ensemble');
}

// setList puts the controls' values in the URL; the page starts over from
// the first unless a cursor is given.
function setList(cursor) {
  const u = new URL(location.href);
  for (const k of Object.keys(defaults)) {
    const el = controls.elements[k];
    const v = el ? el.value.trim() : u.searchParams.get(k) || '';
    if (v && v !== defaults[k]) u.searchParams.set(k, v);
    else u.searchParams.delete(k);
  }
  if (cursor) u.searchParams.set('cursor', cursor);
  else u.searchParams.delete('cursor');
  history.replaceState(null, '', u);
  poll();
}

// showLive marks the page live as the service line the server rendered
// says, which holds whether or not any lock is watched.
function showLive() {
  const ens = ensemble();
  document.body.dataset.live = String(!!ens && ens.dataset.state === 'connected');
}

// showUnreachable says that this page lost the zklockviz server itself: the
// one state the server cannot render.
function showUnreachable() {
  const ens = ensemble();
  if (ens) {
    ens.dataset.state = 'server-unreachable';
    ens.textContent = say('dash.unreachable');
  }
  showLive();
}

// markFirstRow marks when the first lock row was drawn, in milliseconds
// since navigation (body data-first-row), for the dashboard's benchmark:
// after the first frame that has it, so at most a frame late.
let marking = false;
function markFirstRow() {
  if (marking || !document.querySelector('#locks-body tr[data-lock]')) return;
  marking = true;
  requestAnimationFrame(() => setTimeout(() => {
    document.body.dataset.firstRow = String(Math.round(performance.now()));
  }));
}

async function refresh() {
  const mine = ++seq;
  const res = await fetch(partURL(), { headers: { Accept: 'text/html' } });
  if (!res.ok) throw new Error(res.status + ' ' + res.statusText);
  const html = await res.text();
  if (mine < shown) return;
  shown = mine;
  live.innerHTML = html;
  showLive();
  markFirstRow();
}

async function poll() {
  clearTimeout(timer);
  try {
    await refresh();
    failures = 0;
  } catch {
    failures++;
    showUnreachable();
  }
  // Another poll may have ended meanwhile: keep one timer.
  clearTimeout(timer);
  timer = setTimeout(poll, failures ? Math.min(10000, 1000 * 2 ** failures) : 2000);
}

// The selects apply at once; the search as one types, a beat after the
// last key.
for (const sel of controls.querySelectorAll('select')) {
  sel.addEventListener('change', () => setList(''));
}
let typing = null;
search.addEventListener('input', () => {
  clearTimeout(typing);
  typing = setTimeout(() => setList(''), 200);
});
controls.addEventListener('submit', (e) => {
  e.preventDefault();
  clearTimeout(typing);
  setList('');
});

// The pager's links (and the totals', which pick a state) are plain links
// for a page without script; here they change the list in place.
live.addEventListener('click', (e) => {
  const a = e.target.closest('#pager a[data-cursor], #totals a[data-total]');
  if (!a || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  if (a.dataset.total) {
    controls.elements.state.value = a.dataset.total;
    setList('');
    return;
  }
  setList(a.dataset.cursor);
});

// "/" goes to the search, as on most sites with one.
document.addEventListener('keydown', (e) => {
  if (e.key !== '/' || e.metaKey || e.ctrlKey || e.altKey) return;
  const t = e.target;
  if (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName)) return;
  e.preventDefault();
  search.focus();
  search.select();
});

form.addEventListener('submit', async (e) => {
  e.preventDefault();
  const path = form.elements.path.value.trim();
  const svc = form.elements.service ? form.elements.service.value : '';
  msg.textContent = '';
  msg.className = '';
  try {
    const res = await fetch('/api/v1/watch', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(svc ? { service: svc, path } : { path }),
    });
    if (!res.ok) {
      let text = `${res.status} ${res.statusText}`;
      try {
        const j = await res.json();
        text = j.error || text;
      } catch {}
      throw new Error(text);
    }
    msg.textContent = say('page.watching', { path });
    msg.className = 'ok';
    form.elements.path.value = '';
    poll();
  } catch (err) {
    msg.textContent = say('dash.watchFailed', { path, why: err.message });
    msg.className = 'error';
  }
});

showLive();
markFirstRow();
// Poll at once: the first paint may be seconds old by the time the
// module runs.
poll();
