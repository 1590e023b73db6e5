// sim-editor.js is the classroom's scenario editor: the chosen scenario's
// JSON in a text area, a scenario file loaded into it, and the server's
// check of it (POST /scenarios/check: the command line's own check of a
// scenario file), whose verdict or refusal shows beside the editor. A
// scenario that passes runs as a built-in does: the page lists it and
// starts it from its definition.

import { say } from './queue.js';
import { call } from './sim-api.js';

const $ = (id) => document.getElementById(id);

// serviceQuery names the service a scenario's text is for: its own
// "service" field when the text reads as JSON, else fallback's (the
// chosen scenario's), so a malformed file is still told its line.
function serviceQuery(text, fallback) {
  let svc = fallback || '';
  try {
    const v = JSON.parse(text);
    if (v && typeof v.service === 'string') svc = v.service;
  } catch {
    // Not JSON yet: the server says where.
  }
  return svc ? `?service=${encodeURIComponent(svc)}` : '';
}

// scenarioEditor wires the editor. current() is the chosen scenario as
// the page lists it; run(checked) starts a checked scenario
// ({scenario, definition}).
export function scenarioEditor({ current, run }) {
  const box = $('scenario-editor');
  if (!box) return { follow() {} };
  const text = $('scenario-json');
  const file = $('scenario-file');
  const verdict = $('scenario-verdict');
  // The text the chosen scenario filled in: an edit or a loaded file
  // is not replaced by another scenario's.
  let filled = null;

  function tell(msg, failed) {
    verdict.textContent = msg;
    verdict.classList.toggle('error', !!failed);
    box.dataset.verdict = failed ? 'refused' : msg ? 'ok' : '';
  }

  // follow fills the editor with the chosen scenario's definition, unless
  // the text was changed since it was filled.
  async function follow() {
    if (!box.open || (filled !== null && text.value !== filled)) return;
    const info = current();
    tell('', false);
    if (info.definition) {
      text.value = filled = JSON.stringify(info.definition, null, 2);
      return;
    }
    if (!info.id || info.panes) {
      text.value = filled = '';
      tell(say('editor.noDefinition'), false);
      return;
    }
    try {
      const svc = info.service ? `?service=${encodeURIComponent(info.service)}` : '';
      const def = await call('GET', `/scenarios/${encodeURIComponent(info.id)}${svc}`);
      if (current() !== info) return;
      text.value = filled = JSON.stringify(def, null, 2);
    } catch (err) {
      tell(err.message, true);
    }
  }

  async function check() {
    try {
      const checked = await call('POST', '/scenarios/check' + serviceQuery(text.value, current().service), text.value);
      tell(say('editor.ok', { title: checked.scenario.title, n: checked.scenario.steps }), false);
      return checked;
    } catch (err) {
      tell(err.message, true);
      return null;
    }
  }

  box.addEventListener('toggle', follow);
  $('scenario-check').addEventListener('click', check);
  $('scenario-run').addEventListener('click', async () => {
    const checked = await check();
    if (checked) {
      // What runs is now the chosen scenario: the editor follows it.
      filled = text.value;
      run(checked);
    }
  });
  file.addEventListener('change', async () => {
    const f = file.files && file.files[0];
    if (!f) return;
    text.value = await f.text();
    file.value = '';
    check();
  });
  return { follow };
}
