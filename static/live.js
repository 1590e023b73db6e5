// live.js keeps one lock's snapshot current over the /ws websocket: the first
// message is a whole snapshot, later ones a snapshot or a delta against the
// revision we hold. A delta against another revision, or a closed socket,
// means reconnecting (with backoff) and starting from a whole snapshot again.

// applyDelta returns the snapshot after msg, or null when msg does not apply
// to snap (its base is another revision). The snapshot's own fields come as
// the server's JSON has them, copied without knowing their names: the
// header's members over ours, less the cleared ones. Then the nodes, as
// web.ApplyDelta does: drop the removed and upserted names, then put each
// upsert at its position (msg.at) in the new list. The order is the
// server's; nothing here sorts.
export function applyDelta(snap, msg) {
  if (!snap || msg.base !== snap.revision) return null;
  const upsert = msg.upsert || [];
  const at = msg.at || [];
  if (at.length !== upsert.length) return null;
  const next = { ...snap, ...msg.header };
  for (const k of msg.cleared || []) delete next[k];
  // A window of a long queue says which part it is in every frame; a
  // frame without one carries every node.
  if (msg.window) next.window = msg.window;
  else delete next.window;
  const drop = new Set([...(msg.remove || []), ...upsert.map((n) => n.name)]);
  const kept = (snap.nodes || []).filter((n) => !drop.has(n.name));
  const nodes = [];
  let k = 0;
  for (let i = 0; i < upsert.length; i++) {
    if (at[i] < nodes.length || at[i] > nodes.length + kept.length - k) return null;
    while (nodes.length < at[i]) nodes.push(kept[k++]);
    nodes.push(upsert[i]);
  }
  while (k < kept.length) nodes.push(kept[k++]);
  next.nodes = nodes;
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

// lockQuery sets a lock's query on URL search params: the server's
// (views.LockQuery, the lock page's data-lock-query), so the browser keeps
// no rule of which service a URL names.
export function lockQuery(params, query) {
  for (const [k, v] of new URLSearchParams(query)) params.set(k, v);
  return params;
}

// LiveLock connects to /ws?<query> (views.LockQuery) and calls onSnapshot(snap) with
// every new state and onStatus({socket: "open"|"connecting"|"reconnecting",
// attempt, retryInMs}) when the socket's state changes. With a window
// ({from, size, node}), a long queue comes as that part of it (the server's
// web/window.go; snap.window says which part); setWindow moves it. With
// window.parts (and the table's page and filter q), every frame also
// carries the page's parts (msg.parts).
export class LiveLock {
  constructor(path, { query = '', onSnapshot, onStatus, base = '', window = null } = {}) {
    this.path = path;
    this.query = query;
    this.window = window;
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
    lockQuery(u.searchParams, this.query);
    if (this.window) {
      u.searchParams.set('window', `${this.window.from}:${this.window.size}`);
      if (this.window.node) u.searchParams.set('node', this.window.node);
      // The page's parts and lane labels come with every frame
      // (web/pageframe.go), for the table's page and filter.
      if (this.window.parts) {
        u.searchParams.set('parts', '1');
        u.searchParams.set('page', String(this.window.page || 0));
        if (this.window.q) u.searchParams.set('q', this.window.q);
        if (this.window.show) u.searchParams.set('show', '1');
      }
    }
    return u.toString();
  }

  // setWindow looks at another window of the queue: a socket on it takes
  // the place of the one open, which stays until the new one is asked for.
  // The page keeps what it shows until the new window's snapshot comes,
  // and the socket's state is not said to change.
  setWindow(w) {
    const same = (a, b) =>
      a.from === b.from && a.size === b.size && (a.node || '') === (b.node || '') && (a.page || 0) === (b.page || 0) && (a.q || '') === (b.q || '') && !!a.show === !!b.show;
    if (!w || !this.window || same(w, this.window)) return;
    this.window = w;
    const old = this.ws;
    if (!old) return; // the next connect asks for it
    this.ws = null;
    const wasOpen = old.readyState === WebSocket.OPEN;
    closeSocket(old, 1000, 'window moved');
    this.connect(wasOpen);
  }

  connect(quiet = false) {
    if (this.closed) return;
    if (!quiet) this.onStatus({ socket: this.attempt ? 'reconnecting' : 'connecting', attempt: this.attempt });
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
      if (!quiet) this.onStatus({ socket: 'open', attempt: 0 });
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
        // The window is the frame's, beside the snapshot (web.Frame).
        if (msg.window) this.snap.window = msg.window;
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
