// lab.js drives the Lab page: it starts a run from the form, puts in
// #lab-live each view the server renders and streams
// (/api/v1/lab/runs/{id}/live, server-sent events), and stops the run.
// Every lane, count and word is the server's: nothing is worked out here.
import { say } from './queue.js';

const API = '/api/v1/lab/runs';
const OWNER_HEADER = 'X-Zklockviz-Run-Owner';

const form = document.getElementById('lab-form');
const live = document.getElementById('lab-live');
const errorBox = document.getElementById('lab-error');
const startBtn = document.getElementById('lab-start');
const stopBtn = document.getElementById('lab-stop');
let run = null; // { id, owner, source }

function showError(msg) {
  errorBox.textContent = msg;
  errorBox.hidden = !msg;
}

function going(on) {
  startBtn.disabled = on;
  stopBtn.disabled = !on;
}

async function start(ev) {
  ev.preventDefault();
  showError('');
  const val = (id) => document.getElementById(id).value;
  const body = {
    service: val('lab-service'),
    clients: Number(val('lab-clients')),
    nemesis: val('lab-nemesis'),
    seed: Number(val('lab-seed')),
    duration: val('lab-duration'),
    fencing: document.getElementById('lab-fencing').checked,
  };
  going(true);
  let res;
  try {
    res = await fetch(API, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  } catch (err) {
    going(false);
    showError(say('lab.noAnswer', { why: err.message }));
    return;
  }
  const answer = await res.json().catch(() => ({}));
  if (!res.ok) {
    going(false);
    showError(answer.error || say('lab.answered', { status: res.status }));
    return;
  }
  const source = new EventSource(`${API}/${encodeURIComponent(answer.id)}/live`);
  run = { id: answer.id, owner: answer.owner, source };
  source.onmessage = (e) => {
    live.innerHTML = e.data;
  };
  source.addEventListener('done', (e) => {
    live.innerHTML = e.data;
    source.close();
    run = null;
    going(false);
  });
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) {
      showError(say('lab.cutOff'));
      going(false);
    }
  };
}

async function stop() {
  if (!run) return;
  stopBtn.disabled = true;
  const res = await fetch(`${API}/${encodeURIComponent(run.id)}/stop`, { method: 'POST', headers: { [OWNER_HEADER]: run.owner } }).catch((err) => ({
    ok: false,
    json: async () => ({ error: say('lab.noAnswer', { why: err.message }) }),
  }));
  if (!res.ok) {
    const answer = await res.json().catch(() => ({}));
    showError(answer.error || say('lab.answered', { status: res.status }));
    stopBtn.disabled = false;
  }
}

if (form) {
  form.addEventListener('submit', start);
  stopBtn.addEventListener('click', stop);
}
