// sim-api.js talks to the classroom's HTTP API. It counts the calls not
// answered yet, so the page can tell when nothing is under way, and calls
// the settled listener after each answer.

export const API = '/api/v1/sim';

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
  try {
    const res = await fetch(API + path, {
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
    return data;
  } finally {
    pending--;
    // After the caller has taken the answer: a run held back for it may
    // show now (or not: a failed step leaves the runs apart).
    setTimeout(settled, 0);
  }
}
