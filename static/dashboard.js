// dashboard.js keeps the list of watched locks current by polling the JSON
// API (cheap: one summary line per lock) and adds paths to watch.

import { fmtDur, shortName } from './queue.js';

const tbody = document.getElementById('locks-body');
const conn = document.getElementById('ensemble');
const form = document.getElementById('watch-form');
const msg = document.getElementById('watch-msg');
let failures = 0;

function count(v) {
  if (Array.isArray(v)) return v.length;
  return typeof v === 'number' ? v : 0;
}

function names(v) {
  if (Array.isArray(v)) return v;
  return [];
}

function cell(tr, text, cls) {
  const td = document.createElement('td');
  if (text instanceof Node) td.append(text);
  else td.textContent = text;
  if (cls) td.className = cls;
  tr.append(td);
  return td;
}

function render(locks) {
  const frag = document.createDocumentFragment();
  for (const l of locks) {
    const tr = document.createElement('tr');
    tr.dataset.lock = l.path;
    tr.dataset.connection = l.connection || '';
    const a = document.createElement('a');
    a.href = '/lock?path=' + encodeURIComponent(l.path);
    a.textContent = l.path;
    cell(tr, a, 'mono');
    cell(tr, l.recipe || '—');
    const holders = names(l.holders);
    const hc = cell(tr, holders.length ? holders.slice(0, 3).map(shortName).join(', ') + (holders.length > 3 ? ` +${holders.length - 3}` : '') : l.pending ? 'not read yet' : 'none', 'mono holders');
    if (holders.length) hc.title = holders.slice(0, 50).join('\n');
    cell(tr, count(l.waiters).toLocaleString('en-US'), 'num');
    cell(tr, l.oldestWaitMs > 0 ? fmtDur(l.oldestWaitMs) : '—', 'num');
    const alerts = Array.isArray(l.alerts) ? l.alerts : [];
    const al = cell(tr, alerts.length ? alerts.map((x) => x.kind || x).join(', ') : count(l.alerts) ? `${count(l.alerts)} alert${count(l.alerts) === 1 ? '' : 's'}` : '—', alerts.length || count(l.alerts) ? 'alerts warn' : 'alerts');
    if (alerts.length) al.title = alerts.map((x) => x.message || x).join('\n');
    cell(tr, l.connection || '?', 'conn conn-' + (l.connection || 'unknown'));
    frag.append(tr);
  }
  if (!locks.length) {
    const tr = document.createElement('tr');
    const td = cell(tr, 'No locks watched yet. Add a lock parent path below.', 'dim');
    td.colSpan = 7;
    frag.append(tr);
  }
  tbody.replaceChildren(frag);
}

// connectionText says what the watcher's session state means for the table.
const connectionText = {
  connected: 'ZooKeeper: connected',
  reconnecting: 'ZooKeeper: unreachable, reconnecting — lock states below are NOT live',
  expired: 'ZooKeeper: session expired — lock states below are NOT live',
  none: 'ZooKeeper: this server has no watcher',
  'server-unreachable': 'zklockviz server unreachable — retrying; nothing below is live',
};

// renderConnection shows the watcher's own session state (the API's
// top-level "connection"; empty when the server has no watcher), which holds
// whether or not any lock is watched.
function renderConnection(data) {
  let state = failures > 0 ? 'server-unreachable' : data.connection || 'none';
  conn.dataset.state = state;
  document.body.dataset.live = String(state === 'connected');
  let text = connectionText[state] || `ZooKeeper: ${state}`;
  if (state === 'connected' && !(data.locks || []).length) text += ' · no lock watched yet';
  conn.textContent = text;
}

async function poll() {
  try {
    const res = await fetch('/api/v1/locks', { headers: { Accept: 'application/json' } });
    if (!res.ok) throw new Error(res.status + ' ' + res.statusText);
    const data = await res.json();
    failures = 0;
    render(data.locks || []);
    renderConnection(data);
  } catch (err) {
    failures++;
    renderConnection({ locks: [] });
  }
  setTimeout(poll, failures ? Math.min(10000, 1000 * 2 ** failures) : 2000);
}

form.addEventListener('submit', async (e) => {
  e.preventDefault();
  const path = form.elements.path.value.trim();
  msg.textContent = '';
  msg.className = '';
  try {
    const res = await fetch('/api/v1/watch', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ path }),
    });
    if (!res.ok) {
      let text = `${res.status} ${res.statusText}`;
      try {
        const j = await res.json();
        text = j.error || j.message || text;
      } catch {}
      throw new Error(text);
    }
    msg.textContent = `Watching ${path}.`;
    msg.className = 'ok';
    form.elements.path.value = '';
    poll0();
  } catch (err) {
    msg.textContent = `Could not watch ${path}: ${err.message}`;
    msg.className = 'error';
  }
});

// poll0 refreshes now without starting a second polling loop.
async function poll0() {
  try {
    const res = await fetch('/api/v1/locks');
    if (res.ok) {
      const data = await res.json();
      render(data.locks || []);
      renderConnection(data);
    }
  } catch {}
}

// Poll at once: the first paint may lack what only the API says (the
// watcher's own session state when the server was not given it).
poll();
