// sim-predict.js draws predict-then-reveal on a run's card: the next
// step's questions as the server asks them (a state's "predict",
// web/classroom_predict.go) and, for the shown step, the right answers,
// this browser's own and the class's counts ("reveal"). The server decides
// what each step asks and what is right; this file draws it, keeps the
// student's picks and sends them.

import { say } from './queue.js';

const VIEWER_KEY = 'zklockviz.viewer';

// viewerId is this browser's random id, one answer per browser and step:
// no name, no account, kept in localStorage.
export function viewerId() {
  let id = null;
  try {
    id = localStorage.getItem(VIEWER_KEY);
  } catch {
    // Storage refused: a new id for this page.
  }
  if (!id || !/^[A-Za-z0-9_-]{8,64}$/.test(id)) {
    const b = crypto.getRandomValues(new Uint8Array(12));
    id = 'v' + [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
    try {
      localStorage.setItem(VIEWER_KEY, id);
    } catch {
      // As above.
    }
  }
  return id;
}

// Quiz is one run's predict box: el is the card's .quiz, send(step,
// answers) posts the picks and resolves once they are taken.
export class Quiz {
  constructor(el, send) {
    this.el = el;
    this.send = send;
    this.state = null;
    // picks are the picks of the step asked: {step, byQ: Map(id → Set)}.
    this.picks = { step: 0, byQ: new Map() };
    this.sending = false;
  }

  // draw shows s's questions and answers; null hides the box.
  draw(s) {
    this.state = s;
    this.el.hidden = !s;
    this.el.replaceChildren();
    if (!s) return;
    this.el.dataset.held = String(!!s.held);
    if (s.held) {
      const p = document.createElement('p');
      p.className = 'quiz-held';
      p.textContent = say('predict.held', { step: s.runStep });
      this.el.append(p);
    }
    if (s.reveal && s.reveal.step === s.step) this.el.append(this.revealed(s.reveal));
    if (s.predict) this.el.append(this.asked(s.predict));
  }

  // revealed is a shown step's questions with the right answer, this
  // browser's mark and the class's counts.
  revealed(r) {
    const box = document.createElement('div');
    box.className = 'quiz-reveal';
    box.dataset.step = r.step;
    const h = document.createElement('strong');
    h.textContent = say('predict.revealed', { step: r.step });
    box.append(h);
    for (const [id, text] of Object.entries(r.asked || {})) {
      const row = document.createElement('div');
      row.className = 'quiz-row';
      row.dataset.q = id;
      const right = (r.right || {})[id];
      const mine = r.mine && r.mine[id];
      row.dataset.mark = !mine || right === undefined ? 'none' : mine === right ? 'right' : 'wrong';
      const q = document.createElement('span');
      q.textContent = text + ' ';
      const ans = document.createElement('b');
      ans.className = 'quiz-right';
      ans.textContent = right === undefined ? say('predict.noAnswer') : right;
      row.append(q, ans);
      if (mine) {
        const you = document.createElement('span');
        you.className = 'quiz-mine';
        you.textContent = say(row.dataset.mark === 'right' ? 'predict.youRight' : 'predict.youWrong', { answer: mine });
        row.append(' ', you);
      }
      const counts = Object.entries((r.counts || {})[id] || {}).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
      if (counts.length) {
        const c = document.createElement('span');
        c.className = 'quiz-counts';
        c.textContent = counts.map(([a, n]) => say('predict.said', { n, answer: a })).join(', ');
        row.append(' · ', c);
      }
      box.append(row);
    }
    return box;
  }

  // asked is the next step's questions: a choice is a button (pressed when
  // picked), several for a set, one for yes or no.
  asked(p) {
    if (this.picks.step !== p.step) this.picks = { step: p.step, byQ: new Map() };
    const box = document.createElement('div');
    box.className = 'quiz-ask';
    box.dataset.step = p.step;
    const h = document.createElement('strong');
    h.textContent = say('predict.ask', { step: p.step, act: `${p.client ? p.client + ' ' : ''}${p.action}` });
    box.append(h);
    for (const q of p.questions) {
      const fs = document.createElement('fieldset');
      fs.dataset.q = q.id;
      const lg = document.createElement('legend');
      lg.textContent = q.text + (q.many ? say('predict.many') : '');
      fs.append(lg);
      const picked = this.picks.byQ.get(q.id) || new Set();
      for (const c of q.choices) {
        const b = document.createElement('button');
        b.type = 'button';
        b.dataset.choice = c;
        b.textContent = c;
        b.setAttribute('aria-pressed', String(picked.has(c)));
        b.disabled = p.mine;
        b.addEventListener('click', () => this.pick(q, c));
        fs.append(b);
      }
      box.append(fs);
    }
    const send = document.createElement('button');
    send.type = 'button';
    send.className = 'primary quiz-send';
    send.textContent = say('predict.send');
    send.disabled = p.mine || this.sending || p.questions.some((q) => !q.many && !(this.picks.byQ.get(q.id) || new Set()).size);
    send.addEventListener('click', () => this.submit(p));
    const note = document.createElement('span');
    note.className = 'dim quiz-note';
    note.textContent = (p.mine ? say('predict.sent') + ' ' : '') + say('predict.answered', { n: p.answered });
    box.append(send, ' ', note);
    return box;
  }

  pick(q, c) {
    const set = this.picks.byQ.get(q.id) || new Set();
    if (q.many) {
      if (set.has(c)) set.delete(c);
      else set.add(c);
    } else {
      set.clear();
      set.add(c);
    }
    this.picks.byQ.set(q.id, set);
    this.draw(this.state);
  }

  async submit(p) {
    const answers = Object.fromEntries(p.questions.map((q) => [q.id, [...(this.picks.byQ.get(q.id) || [])]]));
    this.sending = true;
    this.draw(this.state);
    try {
      await this.send(p.step, answers);
    } finally {
      this.sending = false;
      if (this.state) this.draw(this.state);
    }
  }
}
