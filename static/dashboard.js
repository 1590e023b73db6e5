// dashboard.js keeps the dashboard current: it fetches the server's own
// rendering of the changing part (GET /parts/dashboard, the same templ
// component as the first paint) and swaps it in, so every label is the
// server's. It also sends the watch form and applies the service filter.

const live = document.getElementById('dash-live');
const form = document.getElementById('watch-form');
const msg = document.getElementById('watch-msg');
const filter = document.getElementById('filter-service');
let failures = 0;
let timer = null;

// service is the filter's choice, "" for every service.
function service() {
  return filter ? filter.value : new URLSearchParams(location.search).get('service') || '';
}

function partURL() {
  const u = new URL('/parts/dashboard', location.href);
  if (service()) u.searchParams.set('service', service());
  return u;
}

// ensemble is the first service's line: ZooKeeper's when this server reads
// ZooKeeper, else the first other service's.
function ensemble() {
  return document.getElementById('ensemble') || document.querySelector('#services .ensemble');
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
    ens.textContent = 'zklockviz server unreachable — retrying; nothing below is live';
  }
  showLive();
}

async function refresh() {
  const res = await fetch(partURL(), { headers: { Accept: 'text/html' } });
  if (!res.ok) throw new Error(res.status + ' ' + res.statusText);
  live.innerHTML = await res.text();
  showLive();
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
  timer = setTimeout(poll, failures ? Math.min(10000, 1000 * 2 ** failures) : 2000);
}

if (filter) {
  filter.addEventListener('change', () => {
    const u = new URL(location.href);
    if (service()) u.searchParams.set('service', service());
    else u.searchParams.delete('service');
    history.replaceState(null, '', u);
    poll();
  });
}

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
    msg.textContent = `Watching ${path}.`;
    msg.className = 'ok';
    form.elements.path.value = '';
    poll();
  } catch (err) {
    msg.textContent = `Could not watch ${path}: ${err.message}`;
    msg.className = 'error';
  }
});

showLive();
// Poll at once: the first paint may be seconds old by the time the
// module runs.
poll();
