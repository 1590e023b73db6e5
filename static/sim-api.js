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
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
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
    return data;
  } finally {
    pending--;
    // After the caller has taken the answer: a run held back for it may
    // show now (or not: a failed step leaves the runs apart).
    setTimeout(settled, 0);
  }
}
