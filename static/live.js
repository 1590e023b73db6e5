// live.js keeps one lock's snapshot current over the /ws websocket: the first
// message is a whole snapshot, later ones a snapshot or a delta against the
// revision we hold. A delta against another revision, or a closed socket,
// means reconnecting (with backoff) and starting from a whole snapshot again.

const HEADER = ['path', 'revision', 'connection', 'watchSource', 'recipe', 'exists', 'leases', 'leasesInferred', 'alerts', 'invisibleChildWatches', 'updatedAt', 'error'];

// nodeLess is lockqueue.NodeLess: lock nodes by (folder, order, seq, czxid, name),
// then foreign children by name. A semaphore's nodes live in more than one
// folder; other nodes have none.
const folderOf = (n) => n.folder || '';
export function nodeLess(a, b) {
  const fa = a.foreign ? 1 : 0;
  const fb = b.foreign ? 1 : 0;
  if (fa !== fb) return fa - fb;
  if (fa) return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  if (folderOf(a) !== folderOf(b)) return folderOf(a) < folderOf(b) ? -1 : 1;
  if ((a.order || 0) !== (b.order || 0)) return (a.order || 0) - (b.order || 0);
  if (a.seq !== b.seq) return a.seq - b.seq;
  if (a.czxid !== b.czxid) return a.czxid - b.czxid;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

// applyDelta returns the snapshot after msg, or null when msg does not apply
// to snap (its base is another revision).
export function applyDelta(snap, msg) {
  if (!snap || msg.base !== snap.revision || (msg.path && msg.path !== snap.path)) return null;
  const next = { ...snap };
  for (const k of HEADER) if (k in msg) next[k] = msg[k];
  const byName = new Map((snap.nodes || []).map((n) => [n.name, n]));
  for (const name of msg.remove || []) byName.delete(name);
  for (const n of msg.upsert || []) byName.set(n.name, n);
  next.nodes = [...byName.values()].sort(nodeLess);
  return next;
}

// closeSocket closes ws for good and resolves once it is closed. A socket
// still connecting is closed as soon as it opens: closing it before that
// makes the browser log "WebSocket is closed before the connection is
// established". Its messages are dropped from now on.
export function closeSocket(ws, code = 1000, reason = '') {
  ws.onmessage = null;
  return new Promise((resolve) => {
    ws.onclose = () => resolve();
    ws.onerror = () => {};
    if (ws.readyState === WebSocket.CONNECTING) ws.onopen = () => ws.close(code, reason);
    else if (ws.readyState === WebSocket.OPEN) ws.close(code, reason);
    else if (ws.readyState === WebSocket.CLOSED) resolve();
  });
}

// lockQuery sets a lock's (service, path) on URL search params; ZooKeeper's
// locks name no service, as every URL before other services did.
export function lockQuery(params, service, path) {
  if (service && service !== 'zookeeper') params.set('service', service);
  params.set('path', path);
  return params;
}

// LiveLock connects to /ws?service=&path= and calls onSnapshot(snap) with
// every new state and onStatus({socket: "open"|"connecting"|"reconnecting",
// attempt, retryInMs}) when the socket's state changes.
export class LiveLock {
  constructor(path, { service = '', onSnapshot, onStatus, base = '' } = {}) {
    this.path = path;
    this.service = service;
    this.onSnapshot = onSnapshot || (() => {});
    this.onStatus = onStatus || (() => {});
    this.base = base;
    this.snap = null;
    this.attempt = 0;
    this.closed = false;
    this.timer = null;
  }

  start() {
    this.connect();
    return this;
  }

  url() {
    const u = new URL(this.base + '/ws', location.href);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    lockQuery(u.searchParams, this.service, this.path);
    return u.toString();
  }

  connect() {
    if (this.closed) return;
    this.onStatus({ socket: this.attempt ? 'reconnecting' : 'connecting', attempt: this.attempt });
    let ws;
    try {
      ws = new WebSocket(this.url());
    } catch (err) {
      this.retry();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      this.attempt = 0;
      this.onStatus({ socket: 'open', attempt: 0 });
    };
    ws.onmessage = (ev) => {
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (msg.type === 'snapshot' && msg.snapshot) {
        this.snap = msg.snapshot;
        this.snap.nodes = this.snap.nodes || [];
        this.onSnapshot(this.snap, msg);
      } else if (msg.type === 'delta') {
        const next = applyDelta(this.snap, msg);
        if (!next) {
          // We missed a revision: only a fresh snapshot can be trusted.
          ws.close(4000, 'delta base mismatch');
          return;
        }
        this.snap = next;
        this.onSnapshot(next, msg);
      }
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.retry();
    };
    ws.onerror = () => {};
  }

  retry() {
    if (this.closed) return;
    this.attempt++;
    // 0.25s, 0.5s, 1s, ... capped at 5s, with jitter so many tabs do not
    // reconnect in lockstep after a server restart.
    const wait = Math.min(5000, 250 * 2 ** Math.min(this.attempt - 1, 5)) * (0.8 + Math.random() * 0.4);
    this.onStatus({ socket: 'reconnecting', attempt: this.attempt, retryInMs: wait });
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), wait);
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.ws) closeSocket(this.ws, 1000, 'page closed');
  }
}
