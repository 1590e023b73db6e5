// sim-api.js talks to the classroom's HTTP API. It counts the calls not
// answered yet, so the page can tell when nothing is under way, and calls
// the settled listener after each answer.

export const API = '/api/v1/sim';

// A request goes to the classroom of one lock service (?service=;
// ZooKeeper's when left out): a run's to the service it was started on,
// the others to the page's, which follows the scenario it starts.
let service = '';
const runService = new Map();

export function setService(name) {
  service = name || '';
}

// apiURL is the API's URL for path, naming the service that answers it.
export function apiURL(path) {
  const m = /^\/runs\/([^/?]+)/.exec(path);
  const svc = (m && runService.get(decodeURIComponent(m[1]))) ?? service;
  if (!svc || /[?&]service=/.test(path)) return API + path;
  return `${API}${path}${path.includes('?') ? '&' : '?'}service=${encodeURIComponent(svc)}`;
}

// A run's owner secret, which its start answers, is what lets this
// browser delete it: kept in localStorage, so another tab of this browser
// may delete the run too, and sent back as a header (never a cookie,
// which another site's page could make the browser send).
export const OWNER_HEADER = 'X-Zklockviz-Run-Owner';
const OWNERS_KEY = 'zklockviz.runOwners';
const MAX_OWNED = 64;

function owned() {
  try {
    return JSON.parse(localStorage.getItem(OWNERS_KEY) || '{}') || {};
  } catch {
    return {};
  }
}

function keepOwned(o) {
  // The newest runs' secrets: a run forgotten here closes by itself.
  const ids = Object.keys(o).slice(-MAX_OWNED);
  try {
    localStorage.setItem(OWNERS_KEY, JSON.stringify(Object.fromEntries(ids.map((id) => [id, o[id]]))));
  } catch {
    // Storage refused (a private window's quota): this tab cannot delete its runs from another.
  }
}

// ownerHeaders are the headers that prove this browser's runs its own.
export function ownerHeaders() {
  const secrets = Object.values(owned());
  return secrets.length ? { [OWNER_HEADER]: secrets.join(', ') } : {};
}

let pending = 0;
let settled = () => {};

// inflight is how many calls are not answered yet.
export function inflight() {
  return pending;
}

// onSettled sets what runs after every answer, once its caller took it.
export function onSettled(fn) {
  settled = fn;
}

// call sends one request and answers its JSON; a refusal throws the
// server's error message.
export async function call(method, path, body) {
  pending++;
  const svc = service;
  try {
    const res = await fetch(apiURL(path), {
      method,
      headers: { ...ownerHeaders(), ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      // A string goes as it is: a scenario file's text, checked by the server.
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    let data = null;
    const text = await res.text();
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = { error: text };
      }
    }
    if (!res.ok) throw new Error((data && data.error) || `${res.status} ${res.statusText}`);
    if (method === 'POST' && path === '/runs' && data && data.id) runService.set(data.id, svc);
    if (method === 'POST' && /^\/runs(\?|$)/.test(path) && data && data.owner) keepOwned({ ...owned(), [data.id]: data.owner });
    if (method === 'DELETE' && res.ok) {
      // A deleted run's secret opens nothing any more.
      const m = /^\/runs\/([^/?]+)$/.exec(path.split('?')[0]);
      const o = owned();
      if (m && o[decodeURIComponent(m[1])] !== undefined) {
        delete o[decodeURIComponent(m[1])];
        keepOwned(o);
      }
    }
    return data;
  } finally {
    // Counted until the caller has taken the answer, a task later: the
    // caller's await resumes after other answers' callers may have run,
    // and a run that showed its step then would not wait for this one
    // (side by side, four panes showed step 2 while one still showed 1).
    // Then a run held back for it may show (or not: a failed step leaves
    // the runs apart).
    setTimeout(() => {
      pending--;
      settled();
    }, 0);
  }
}
