// sim.js runs the classroom: it starts simulator runs (one, or a herd run and
// a predecessor run side by side on the same scenario), follows each over its
// websocket, and sends the teacher's commands (play, step, scrub, act on a
// client) as plain HTTP POSTs. All the lock logic is the server's; this file
// only shows states and forwards intentions.

import { legend, tick, say } from './queue.js';
import { apiURL, call, inflight, onSettled, ownerHeaders, setService } from './sim-api.js';
import { scenarioEditor } from './sim-editor.js';
import { Panel } from './sim-panel.js';
import { sideBySide, wordsOf } from './sim-views.js';
import { Timeline, timelineKeys } from './timeline.js';

const $ = (id) => document.getElementById(id);
const ui = {
  scenario: $('scenario'), strategy: $('strategy'), clients: $('clients'), fencing: $('fencing'),
  restart: $('restart'), back: $('back'), play: $('play'), step: $('step'), speed: $('speed'),
  speedOut: $('speed-out'), addReader: $('add-reader'), addWriter: $('add-writer'), share: $('share'),
  scrub: $('scrub'), ticks: $('ticks'), stepInfo: $('step-info'), runs: $('runs'), error: $('sim-error'),
  shortcuts: $('shortcuts'), strategyFixed: $('strategy-fixed'), runList: $('run-list'), runCount: $('run-count'),
  runItems: $('run-items'), present: $('present'), exportSvg: $('export-svg'), offScript: $('off-script'), offScriptText: $('off-script-text'),
  toScript: $('to-script'), predict: $('predict'), openRun: $('open-run'), watchNote: $('watch-note'),
};
// The timeline is the one the lock view's time bar uses (timeline.js).
const timeline = new Timeline(ui.scrub, ui.ticks, { onSeek: (k) => seek(k) });

let scenarios = [];
let panels = []; // one per run
let showTable = false;
// The run's interventions, in order: each a client action taken at a step
// (the step shown when it was taken). The URL carries them, so a shared link
// replays the same run: same scenario, clients, fencing and actions.
let acts = [];
let replaying = null; // {acts, step} from the URL, applied once the runs exist
let generation = 0; // bumps on restart, so late answers of old runs are dropped
// together is the browser's own playback of a comparison: it steps both runs
// at once, on one clock. Each run playing on its own timer drifts apart from
// the other, the herd's steps taking longer on ZooKeeper.
let together = null;
let showing = null; // show() while it moves the runs to their newest states
// predicting: the runs ask each step's questions before showing it
// (predict-then-reveal, ?predict=1, key q). joined: the page follows a run
// another page started (?run=ID), which it may be allowed to move or not.
let predicting = false;
let joined = null; // {id, service}

function showError(err) {
  if (!err) {
    ui.error.hidden = true;
    ui.error.textContent = '';
    return;
  }
  ui.error.hidden = false;
  ui.error.textContent = String(err.message || err);
}

// ---- Showing the runs in lockstep ---------------------------------------
// live are the runs that started: a side-by-side pane whose service could
// not run shows why and takes no part in the lockstep.
function live() {
  return panels.filter((p) => !p.failed);
}

// agreed says whether every run may show its newest state now. Side by side,
// both runs show the same step: a run that got ahead waits for the other,
// as long as the other is still working toward it (an answer pending, or
// answered with its frame still to come, a step running on ZooKeeper,
// playback). When nothing is under way the runs
// really differ, and each shows what it has.
function agreed() {
  const runs = live();
  const newest = runs.map((p) => p.latest()).filter(Boolean);
  if (!newest.length) return false;
  if (newest.length === runs.length && new Set(newest.map((s) => s.step)).size === 1) return true;
  return !inflight() && !together && !runs.some((p) => p.waiting()) && !newest.some((s) => s.busy || s.playing);
}

// show moves every run to its newest state, together: the notifications a
// step delivered are animated in every lane, then every lane is redrawn. A
// run with several states waiting skips to the newest: never lag behind. It
// resolves once nothing more can be shown.
function show() {
  if (!showing) showing = showAll().finally(() => (showing = null));
  return showing;
}

async function showAll() {
  const ps = panels;
  while (ps === panels && ps.some((p) => p.queue.length) && agreed()) {
    const next = ps.map((p) => {
      const s = p.queue.pop();
      p.queue.length = 0;
      return s;
    });
    await Promise.all(ps.map((p, i) => (next[i] && p.state && next[i].step === p.state.step + 1 && !document.hidden ? p.animate(p.state, next[i]) : null)));
    if (ps !== panels) return;
    ps.forEach((p, i) => {
      if (!next[i]) return;
      p.state = next[i];
      p.render();
    });
    syncControls();
  }
}

// userAct sends a client action to every run (in a comparison both runs must
// see the same workload; clients are matched by name) and records it for the
// shareable URL at the step where the lead run took it.
async function userAct(client, action) {
  if (watching()) return;
  const gen = generation;
  const results = await Promise.all(panels.filter((p) => p.state).map((p) => p.act(client, action)));
  const lead = results[0];
  if (gen !== generation || !lead) return;
  acts.push({ step: Math.max(0, lead.step - 1), client, action });
  updateURL();
}

// encodeActs writes acts as "step:client:action,…" (client empty for an added
// reader or writer: the simulator names it, the same way on every replay).
export function encodeActs(list) {
  return list.map((a) => `${a.step}:${a.client || ''}:${a.action}`).join(',');
}

export function decodeActs(text) {
  if (!text) return [];
  const out = [];
  for (const part of text.split(',')) {
    const m = part.match(/^(\d+):([A-Za-z0-9_.-]*):([a-z-]+)$/);
    if (m) out.push({ step: Number(m[1]), client: m[2], action: m[3] });
  }
  return out;
}

// ---- Controls -----------------------------------------------------------
function lead() {
  const p = live()[0];
  return p && p.state;
}

// busyServices names the services whose runs are working on a step.
function busyServices() {
  const names = panels.filter((p) => p.state && p.state.busy).map((p) => wordsOf(p.state.service).title);
  return [...new Set(names)].join(', ');
}

function syncControls() {
  const s = lead();
  const total = s ? s.total : 0;
  const at = s && say('step.of', { step: s.step, total });
  timeline.set({ max: total, value: s ? s.step : 0, text: at || say('step.none') });
  const busy = panels.some((p) => p.state && p.state.busy);
  const next = s && s.next ? `${s.next.client ? s.next.client + ' ' : ''}${s.next.action}` : '';
  let info = at || say('step.starting');
  if (s && s.done) info += say('step.done');
  if (playing()) info += say('step.playing');
  if (busy) info += say('step.working', { services: busyServices() });
  if (next && !playing()) info += say('step.next', { act: next });
  ui.stepInfo.textContent = info;
  ui.stepInfo.dataset.step = s ? s.step : 0;
  document.body.dataset.step = s ? s.step : '';
  document.body.dataset.busy = String(busy);
  const on = playing();
  ui.play.textContent = say(on ? 'play.pause' : 'play.play');
  ui.play.setAttribute('aria-label', say(on ? 'play.ariaPause' : 'play.ariaPlay'));
  ui.play.setAttribute('aria-pressed', String(on));
  document.body.dataset.playing = String(on);
  ui.back.disabled = !s || s.step <= 0;
  ui.step.disabled = !s || s.done;
  ui.step.title = next ? say('step.forwardTo', { act: next }) : say('step.forward');
  const rw = !s || s.lock === 'rw';
  ui.addReader.textContent = say(rw ? 'add.reader' : 'add.client');
  ui.addReader.dataset.action = rw ? 'add-reader' : 'add';
  ui.addWriter.hidden = !rw;
  syncScript(s);
  syncExport();
  renderTicks();
  for (const p of panels) if (p.state) p.renderHerd();
  syncRunList();
  updateURL();
}

// syncExport points the export link at the lead run's time–space diagram,
// which the server draws from the whole recorded run; side by side, the
// first pane's run. Before a step there is nothing to draw.
function syncExport() {
  const p = live()[0];
  const on = !!(p && p.id && p.state && p.state.steps > 0);
  ui.exportSvg.setAttribute('aria-disabled', String(!on));
  if (on) ui.exportSvg.href = apiURL(p.path('/timespace.svg'));
  else ui.exportSvg.removeAttribute('href');
}

// syncScript says, while the lead run is on a what-if branch (State.branch:
// the simulator's account of its script), that the page is off the script,
// what became of the script's remaining steps, and how to return.
function syncScript(s) {
  const b = s && s.branch;
  ui.offScript.hidden = !b;
  document.body.dataset.branch = b ? String(b.from) : '';
  if (!b) return;
  const key = !b.left ? 'script.ended' : b.kept ? 'script.kept' : 'script.dropped';
  ui.offScriptText.textContent = say(key, { from: b.from, left: b.left });
}

// renderTicks marks every step on the timeline: coloured by what happened
// for the steps shown so far, outlined for recorded or planned ones ahead.
function renderTicks() {
  const s = lead();
  if (!s || !s.total) {
    timeline.draw([]);
    return;
  }
  const first = new Map();
  for (const e of s.events) if (!first.has(e.step)) first.set(e.step, e);
  const marks = [];
  for (let k = 1; k <= s.total; k++) {
    const e = first.get(k);
    marks.push({
      value: k,
      cls: (e ? 'k-' + String(e.kind).toLowerCase().replace(/[^a-z]/g, '') : k <= s.steps ? 'recorded' : 'planned') + (k === s.step ? ' current' : ''),
      title: e ? say('step.mark', { step: k, what: `${e.client ? e.client + ' ' : ''}${e.kind}` }) : say(k <= s.steps ? 'step.recorded' : 'step.planned', { step: k }),
      data: { step: k },
    });
  }
  timeline.draw(marks);
}

// updateURL makes the address say everything needed to replay what is shown:
// scenario, strategy, the client count and fencing when they differ from the
// scenario's own, the actions taken, and the step.
function updateURL() {
  if (replaying) return; // the URL still says where the replay is going
  const s = lead();
  const u = new URL(location.href);
  // set names v as ?k=, or drops ?k= when v is empty or false.
  const set = (k, v) => (v ? u.searchParams.set(k, v) : u.searchParams.delete(k));
  set('predict', predicting && '1');
  // A joined run's link is the run's: it reopens the same run.
  if (!joined) {
    const info = scenarioInfo();
    u.searchParams.set('scenario', ui.scenario.value);
    u.searchParams.set('strategy', ui.strategy.value);
    set('clients', info.clients && Number(ui.clients.value) !== info.clients && ui.clients.value);
    set('fencing', ui.fencing.checked !== !!info.fencing && (ui.fencing.checked ? '1' : '0'));
    set('acts', acts.length && encodeActs(acts));
    // An edited scenario is this page's own: the link carries its JSON.
    set('definition', info.definition && JSON.stringify(info.definition));
    set('step', s && s.step && String(s.step));
  }
  set('present', presenting() && '1');
  history.replaceState(null, '', u);
}

// command sends a command to every run (or those only picks); it answers
// whether all took it.
async function command(path, body, only = () => true) {
  // A watcher's keys move nothing: the server would refuse them (403).
  if (watching()) return false;
  showError(null);
  const gen = generation;
  const ok = await Promise.all(
    panels.filter(only).map(async (p) => {
      if (!p.id) return true;
      try {
        const raw = await call('POST', p.path(path), body);
        if (gen === generation && raw) p.accept(raw);
        return true;
      } catch (err) {
        showError(`${p.name}: ${path.slice(1)}: ${err.message}`);
        return false;
      }
    }),
  );
  return ok.every(Boolean);
}

function playing() {
  return !!together || panels.some((p) => p.state && p.state.playing);
}

// playTogether plays a comparison until the end or a pause. A play pressed
// while the last one is still finishing its step starts after it, so two
// loops never step the runs at once.
let playLoop = Promise.resolve();
function playTogether() {
  const me = (together = { gen: generation });
  syncControls();
  playLoop = playLoop.then(() => playSteps(me));
  return playLoop;
}

async function playSteps(me) {
  const going = () => together === me && me.gen === generation;
  try {
    if (!going()) return;
    if (lead() && lead().done && !(await command('/seek', { step: 0 }))) return;
    while (going()) {
      const first = live()[0];
      const s = first && first.latest();
      if (!s || s.done || !(await command('/step'))) break;
      // Every step is shown, its notifications animated, before the next.
      // At the server's own pace (State.stepMs, a step at 1×).
      await Promise.all([show(), new Promise((r) => setTimeout(r, s.stepMs / speedOf(Number(ui.speed.value))))]);
    }
  } finally {
    if (together === me) together = null;
    setTimeout(show, 0);
    syncControls();
  }
}

function stopTogether() {
  together = null;
}

const actions = {
  toggle: () => {
    if (together) return stopTogether();
    if (panels.length > 1) return playTogether();
    return command(playing() ? '/pause' : '/play');
  },
  step: () => {
    stopTogether();
    return command('/step');
  },
  back: () => {
    stopTogether();
    return command('/back');
  },
  first: () => seek(0),
  last: () => seek(timeline.max),
  slower: () => setSpeed(Number(ui.speed.value) - 0.5),
  faster: () => setSpeed(Number(ui.speed.value) + 0.5),
  reader: () => userAct('', ui.addReader.dataset.action || 'add-reader'),
  writer: () => {
    if (!ui.addWriter.hidden) userAct('', 'add-writer');
  },
  // toScript leaves a what-if branch: each run on one goes back to the
  // step it left its script at. The acts taken since are the branch's, so
  // the shared link drops them.
  toScript: async () => {
    const off = (p) => p.latest() && p.latest().branch;
    if (!panels.some(off)) return;
    stopTogether();
    if (await command('/script', undefined, off)) {
      acts = [];
      updateURL();
    }
  },
  present: () => setPresent(!presenting()),
  predict: () => setPredicting(!predicting),
};

// ---- Predict then reveal (sim-predict.js) -------------------------------
// In predict mode every panel's socket asks for the viewer's questions: a
// viewer who may not move the run is held at the steps it answered; one
// who may reveals a step by answering (the page steps) or by stepping.
function setPredicting(on) {
  predicting = on;
  ui.predict.setAttribute('aria-pressed', String(on));
  document.body.dataset.predict = String(on);
  for (const p of panels) {
    p.moveView();
    p.render();
  }
  updateURL();
}

// answered reveals the step a viewer who may move the run answered: the
// page steps (side by side, every run).
function answered(p) {
  if (p.mayControl && p.state && !p.state.held) actions.step();
}

// panelOpts are a Panel's options (sim-panel.js): the page's own, with
// the run's.
function panelOpts(run) {
  return {
    ...run, showTable, current: (g) => g === generation, onState: show, onError: showError, onAct: userAct,
    peers: () => panels.filter((p) => p.state).map((p) => p.herd), predicting: () => predicting, onAnswered: answered,
  };
}

// ---- Watching a run another page started (?run=ID) -----------------------
// watching says whether the page follows a run it may not move: it hides
// the controls it cannot use and says why.
function watching() {
  return !!joined && panels.some((p) => p.joined && !p.mayControl);
}

function syncRights() {
  const watch = watching();
  document.body.dataset.watching = String(watch);
  const p = panels[0];
  for (const el of [ui.back, ui.play, ui.step, ui.addReader, ui.addWriter, ui.restart, ui.toScript, ui.speed.closest('label')]) el.hidden = watch;
  // The timeline shows where the run is; only who may move it scrubs it.
  // (A client's act buttons hide by body[data-watching], app.css.)
  ui.scrub.disabled = watch;
  ui.ticks.inert = watch;
  // A joined run's scenario is its starter's choice.
  for (const el of [ui.scenario, ui.strategy, ui.clients, ui.fencing, ui.openRun]) el.closest('label').hidden = !!joined;
  $('scenario-editor').hidden = !!joined;
  // The run list answers every run's newest state: a student held at a
  // step it has not answered must not fetch the lecturer's.
  ui.runList.hidden = !!joined;
  // The exported diagram draws every recorded step, past the held one.
  ui.exportSvg.hidden = watch;
  ui.watchNote.hidden = !joined || !p;
  if (joined && p) ui.watchNote.textContent = watch ? say('watching.note', { id: joined.id, why: p.controlWhy }) : p.open ? say('watching.open', { id: joined.id }) : '';
  if (joined && p && !watch && !p.open) ui.watchNote.hidden = true;
}

// joinRun follows the run ?run= names instead of starting one.
async function joinRun(id, service) {
  generation++;
  const gen = generation;
  joined = { id, service };
  setService(service);
  const p = new Panel('', false, panelOpts({ service, name: id, title: '' }));
  panels = [p];
  ui.runs.replaceChildren(p.el);
  legend($('legend'), service, null);
  try {
    await p.join(id, gen);
  } catch (err) {
    showError(err.message);
  }
  syncRights();
  syncControls();
}

// ---- Presentation mode --------------------------------------------------
// Presentation mode is for a projector (1280×720): app.css puts the queue
// and the narration above the fold and the controls on one row, and each
// panel scales its lane (Panel.fitLane). The URL keeps it (?present=1), so
// a lecturer can bookmark it; the server then paints it from the start.
function presenting() {
  return document.body.dataset.present === 'true';
}

function setPresent(on) {
  if (on) document.body.dataset.present = 'true';
  else delete document.body.dataset.present;
  syncPresent();
  updateURL();
}

function syncPresent() {
  ui.present.setAttribute('aria-pressed', String(presenting()));
  for (const p of panels) p.fitLane();
}

function seek(step) {
  stopTogether();
  return command('/seek', { step: Math.max(0, step) });
}

function speedOf(v) {
  return Math.round(2 ** v * 1000) / 1000;
}

function setSpeed(v) {
  v = Math.min(Number(ui.speed.max), Math.max(Number(ui.speed.min), v));
  ui.speed.value = String(v);
  const sp = speedOf(v);
  ui.speedOut.textContent = (sp < 1 ? sp.toFixed(sp < 0.25 ? 3 : 2).replace(/0+$/, '') : String(sp)) + '×';
  return sendSpeed(sp);
}

// sendSpeed sends one speed at a time, the newest last: two quick key
// presses are two POSTs the server may take in either order, and the run
// would keep the older speed while the page shows the newer one.
let speedWanted = null;
let speedSending = null;
function sendSpeed(sp) {
  speedWanted = sp;
  if (!speedSending) {
    speedSending = (async () => {
      let ok = true;
      while (speedWanted !== null) {
        const next = speedWanted;
        speedWanted = null;
        ok = await command('/speed', { speed: next });
      }
      speedSending = null;
      return ok;
    })();
  }
  return speedSending;
}

// Scenario 12 is one pane per service, each an ordinary run of that
// service's own scenario (GET /side-by-side lists them); the page names
// and describes it (lockservice.ClassroomsWords.side).
async function loadScenarios() {
  const [data, panes] = await Promise.all([call('GET', '/scenarios?service=*'), call('GET', '/side-by-side').catch(() => null)]);
  scenarios = data || []; // simulator.ScenarioInfo, one per scenario
  if (panes && panes.length) scenarios.push({ ...sideBySide(), panes });
  ui.scenario.replaceChildren();
  for (const sc of scenarios) {
    const o = document.createElement('option');
    o.value = sc.id;
    o.textContent = sc.title;
    if (sc.description) o.title = sc.description;
    ui.scenario.append(o);
  }
  const want = ui.scenario.dataset.initial;
  if (want && scenarios.some((s) => s.id === want)) ui.scenario.value = want;
  else if (want) return say('scenario.unknown', { want, title: scenarioInfo().title || say('scenario.none') });
  return null;
}

function scenarioInfo() {
  return scenarios.find((s) => s.id === ui.scenario.value) || {};
}

// ---- The scenario editor (sim-editor.js) --------------------------------
// A scenario the server checked runs as a built-in does: listed (once per
// name) with its definition, chosen, and started.
const editor = scenarioEditor({
  current: scenarioInfo,
  run(checked) {
    chooseEdited(checked);
    restart();
  },
});

// chooseEdited lists a checked scenario ({scenario, definition}) as
// "<title> (edited)", once per name, and chooses it.
function chooseEdited(checked) {
  const info = { ...checked.scenario, id: 'edited:' + checked.scenario.id, definition: checked.definition };
  scenarios = scenarios.filter((s) => s.id !== info.id).concat(info);
  let o = [...ui.scenario.options].find((x) => x.value === info.id);
  if (!o) {
    o = document.createElement('option');
    o.value = info.id;
    ui.scenario.append(o);
  }
  o.textContent = say('editor.option', { title: info.title });
  ui.scenario.value = info.id;
}

// reopenEdited reopens the edited scenario a shared link carries
// (?definition=, its JSON), checked again by the server as the editor
// checks it; it answers why it cannot, or null.
async function reopenEdited(want, text) {
  if (!text) return say('editor.linkLost', { want, title: scenarioInfo().title || say('scenario.none') });
  let svc = '';
  try {
    const v = JSON.parse(text);
    if (v && typeof v.service === 'string') svc = v.service;
  } catch {
    // Not JSON: the server's check says where.
  }
  try {
    chooseEdited(await call('POST', '/scenarios/check' + (svc ? `?service=${encodeURIComponent(svc)}` : ''), text));
    return null;
  } catch (err) {
    return say('editor.linkRefused', { want, why: err.message });
  }
}

async function restart() {
  generation++;
  together = null;
  const gen = generation;
  acts = [];
  const old = panels;
  panels = [];
  ui.runs.replaceChildren();
  showError(null);
  // The old runs go first: at the server's run limit a new one would be
  // refused while they live.
  await Promise.all(old.map((p) => p.close()));
  if (gen !== generation) return;
  const info = scenarioInfo();
  setService(info.service);
  // A scenario whose recipe has no strategy to choose says why, beside the
  // control it disables.
  const side = !!info.panes;
  const fixed = side ? say('side.fixed') : info.strategyFixed || '';
  ui.strategy.disabled = !!fixed;
  ui.strategy.title = fixed;
  // A strategy that does not apply is not offered: the note beside it
  // says how this scenario's waiters wait instead.
  $('strategy-box').hidden = !!fixed;
  $('compare-key').hidden = !!fixed;
  // Side by side, each pane shows its own service's legend (Panel).
  $('legend').hidden = side;
  if (!side) legend($('legend'), info.service || '', wordsOf(info.service).legendAllModes ? null : info.modes || null);
  ui.strategyFixed.hidden = !fixed;
  ui.strategyFixed.textContent = side ? say('side.fixedNote', { why: fixed }) : info.waiting || (fixed ? say('strategy.fixed', { strategy: info.strategy, why: fixed }) : '');
  // Fencing is offered only where the recipe gives a token a resource can
  // check; elsewhere it is off, and the server says why.
  ui.fencing.disabled = side || !!info.noToken;
  ui.fencing.title = side ? fixed : info.noToken || '';
  const compare = side || (!fixed && ui.strategy.value === 'compare');
  ui.runs.classList.toggle('compare', compare);
  ui.runs.classList.toggle('side-by-side', side);
  const strategies = side ? info.panes.map(() => '') : fixed ? [info.strategy] : compare ? ['herd', 'predecessor'] : [ui.strategy.value];
  panels = strategies.map(
    (st, i) =>
      new Panel(st, compare, panelOpts({
        pane: side ? info.panes[i] : null,
        service: side ? info.panes[i].service : info.service,
        // A service whose waiters choose no strategy is named for itself;
        // how they wait is said once, beside the strategy control.
        name: info.waiting ? info.service : undefined,
        title: info.waiting ? '' : undefined,
        open: () => ui.openRun.checked,
      })),
  );
  for (const p of panels) ui.runs.append(p.el);
  // Only scenarios with a "*" step take a client count; the others name theirs.
  ui.clients.closest('label').hidden = !info.clients;
  if (info.clients && !ui.clients.dataset.touched) ui.clients.value = info.clients;
  if (info.noToken) ui.fencing.checked = false;
  else if (!ui.fencing.dataset.touched) ui.fencing.checked = !!info.fencing;
  const clients = info.clients ? Number(ui.clients.value) || 0 : 0;
  try {
    const started = await Promise.allSettled(panels.map((p) => p.start(info.definition || ui.scenario.value, clients, ui.fencing.checked, gen)));
    // A pane whose service cannot run says why; the others go on.
    started.forEach((r, i) => {
      if (r.status === 'rejected' && side && gen === generation) panels[i].unavailable(r.reason.message);
    });
    const failed = started.find((r) => r.status === 'rejected');
    if (failed && !side) throw failed.reason;
  } catch (err) {
    showError(say('run.startFailed', { why: err.message }));
    // At the run limit the list shows what to delete.
    ui.runList.open = true;
  }
  refreshRuns();
  if (gen === generation) {
    const sp = speedOf(Number(ui.speed.value));
    if (sp !== 1) command('/speed', { speed: sp });
    if (replaying) await replay(gen);
    syncControls();
  }
}

// replay takes a shared link's actions, each at its step, then shows its step.
async function replay(gen) {
  const want = replaying;
  try {
    for (const a of want.acts) {
      if (gen !== generation) return;
      await seek(a.step);
      const results = await Promise.all(panels.map((p) => p.act(a.client, a.action)));
      if (!results[0]) throw new Error(say('replay.failed', { act: `${a.client ? a.client + ' ' : ''}${a.action}`, step: a.step }));
      acts.push(a);
    }
    if (gen === generation && want.step > 0) await seek(want.step);
  } catch (err) {
    showError(say('replay.link', { why: err.message }));
  } finally {
    if (gen === generation) replaying = null;
  }
}

// ---- Open runs ----------------------------------------------------------
// refreshRuns lists the server's open runs, so a teacher sees what holds
// ZooKeeper sessions and can delete what another tab of this browser left
// (the server says which it may: only a run's starter deletes it). This
// tab's own runs are marked, not offered for deletion: restart replaces
// them.
async function refreshRuns() {
  let runs;
  try {
    runs = await call('GET', '/runs');
  } catch (err) {
    ui.runCount.textContent = say('runs.failed', { why: err.message });
    return;
  }
  const mine = new Map(panels.filter((p) => p.id).map((p) => [p.id, p]));
  ui.runCount.textContent = say('runs.count', { n: runs.length });
  ui.runItems.replaceChildren();
  for (const r of runs) {
    const li = document.createElement('li');
    li.dataset.run = r.id;
    const what = document.createElement('span');
    what.dataset.what = `${r.title || r.scenario} · ${r.strategy}`;
    // This tab's run is where its panel shows it, as the status line says;
    // the server's answer may be a step ahead, or seconds old.
    const shown = mine.get(r.id);
    what.textContent = runLine(what.dataset.what, shown && shown.state ? shown.state : r);
    li.append(what, ' ');
    // A link for students: the run watched, each step predicted first.
    const watch = document.createElement('a');
    const u = new URL('/sim', location.href);
    u.searchParams.set('run', r.id);
    if (r.service) u.searchParams.set('service', r.service);
    u.searchParams.set('predict', '1');
    watch.href = u.pathname + u.search;
    watch.dataset.watch = r.id;
    watch.textContent = say('runs.watch');
    watch.setAttribute('aria-label', say('runs.watchAria', { id: r.id }));
    li.append(watch, ' ');
    if (!mine.has(r.id) && r.deletable) {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = say('runs.delete');
      b.dataset.delete = r.id;
      b.setAttribute('aria-label', say('runs.deleteAria', { id: r.id, title: r.title || r.scenario }));
      b.addEventListener('click', async () => {
        b.disabled = true;
        // A run gone already (closed by its own tab) is what was wanted.
        await call('DELETE', `/runs/${encodeURIComponent(r.id)}`).catch(() => {});
        refreshRuns();
      });
      li.append(b);
    } else {
      li.append(Object.assign(document.createElement('span'), { className: 'dim', textContent: say(mine.has(r.id) ? 'runs.mine' : 'runs.others') }));
    }
    ui.runItems.append(li);
  }
}

// runLine words an open run in the list: what it runs, and where it is.
function runLine(what, r) {
  return say('runs.line', { what, step: r.step, total: Math.max(r.steps, r.planned), playing: r.playing ? say('step.playing') : '' });
}

// syncRunList moves this tab's runs in the open list with the panels, so
// the list never lags the status line and the bar while they play.
function syncRunList() {
  if (!ui.runList.open) return;
  for (const p of panels) {
    const what = p.state && p.id ? ui.runItems.querySelector(`li[data-run="${CSS.escape(p.id)}"] [data-what]`) : null;
    if (what) what.textContent = runLine(what.dataset.what, p.state);
  }
}

ui.runList.addEventListener('toggle', () => {
  if (ui.runList.open) refreshRuns();
});
setInterval(() => {
  if (ui.runList.open && !document.hidden) refreshRuns();
}, 5000);

// ---- Wiring -------------------------------------------------------------
// A run held back for an API answer may show once the caller has taken
// the answer (or not: a failed step leaves the runs apart).
onSettled(show);
ui.play.addEventListener('click', actions.toggle);
ui.step.addEventListener('click', actions.step);
ui.back.addEventListener('click', actions.back);
ui.restart.addEventListener('click', restart);
ui.addReader.addEventListener('click', actions.reader);
ui.addWriter.addEventListener('click', actions.writer);
ui.toScript.addEventListener('click', actions.toScript);
ui.present.addEventListener('click', actions.present);
window.addEventListener('resize', () => {
  for (const p of panels) p.fitLane();
});
// A select or number field keeps the focus after a change, and the page's
// keys (Space, the arrows) would go to it: hand the focus back to the page.
for (const el of [ui.scenario, ui.strategy, ui.clients]) el.addEventListener('change', () => el.blur());
ui.scenario.addEventListener('change', () => {
  delete ui.clients.dataset.touched;
  delete ui.fencing.dataset.touched;
  restart();
  editor.follow();
});
// Changing the strategy replays the same actions to the same step, so the
// comparison is on the same workload.
function restartKeeping() {
  const s = lead();
  if (acts.length || (s && s.step)) replaying = { acts: acts.slice(), step: s ? s.step : 0 };
  return restart();
}
ui.strategy.addEventListener('change', restartKeeping);
ui.openRun.addEventListener('change', () => restart());
ui.predict.addEventListener('click', actions.predict);
ui.fencing.addEventListener('change', () => {
  ui.fencing.dataset.touched = '1';
  restart();
});
ui.clients.addEventListener('change', () => {
  ui.clients.dataset.touched = '1';
  restart();
});
ui.speed.addEventListener('input', () => setSpeed(Number(ui.speed.value)));
ui.share.addEventListener('click', async () => {
  updateURL();
  try {
    await navigator.clipboard.writeText(location.href);
    ui.share.textContent = say('share.copied');
  } catch {
    ui.share.textContent = say('share.byHand');
  }
  setTimeout(() => (ui.share.textContent = say('share.link')), 2000);
});
$('shortcuts-close').addEventListener('click', () => (ui.shortcuts.hidden = true));
ui.shortcuts.addEventListener('click', (e) => {
  if (e.target === ui.shortcuts) ui.shortcuts.hidden = true;
});

function toggleTable() {
  showTable = !showTable;
  for (const p of panels) {
    p.tableEl.hidden = !showTable;
    if (showTable) p.showTable();
  }
}

// The timeline's keys (← → Home End) are the shared ones; the classroom's
// own ride along as extras.
timelineKeys(
  {
    back: actions.back, step: actions.step, first: actions.first, last: actions.last,
    extra: {
      ' ': actions.toggle, '[': actions.slower, ']': actions.faster, r: actions.reader, w: actions.writer, t: toggleTable,
      s: actions.toScript, p: actions.present, q: actions.predict,
      e: () => ui.exportSvg.hasAttribute('href') && ui.exportSvg.click(),
      c: () => {
        if (ui.strategy.disabled) return;
        ui.strategy.value = ui.strategy.value === 'compare' ? 'predecessor' : 'compare';
        restartKeeping();
      },
      '?': () => (ui.shortcuts.hidden = false),
      Escape: () => {
        for (const p of panels) {
          p.selectedClient = '';
          p.selectedNode = '';
          p.render();
        }
      },
    },
  },
  (e) => {
    if (e.target && e.target.id === 'speed') return true;
    if (ui.shortcuts.hidden) return false;
    // The help is open: only its own keys close it.
    if (e.key === 'Escape' || e.key === '?') {
      ui.shortcuts.hidden = true;
      e.preventDefault();
    }
    return true;
  },
);

window.addEventListener('pagehide', () => {
  for (const p of panels) {
    // A joined run is its starter's to delete.
    if (p.id && !p.joined) fetch(apiURL(p.path('')), { method: 'DELETE', keepalive: true, headers: ownerHeaders() }).catch(() => {});
  }
});
setInterval(() => tick(ui.runs), 1000);

async function main() {
  const strategy = ui.strategy.dataset.initial;
  if (strategy) ui.strategy.value = strategy;
  const step = Number($('step-info').dataset.step || 0);
  const q = new URLSearchParams(location.search);
  const wantActs = decodeActs(q.get('acts') || '');
  if (step > 0 || wantActs.length) replaying = { step, acts: wantActs };
  if (q.has('clients') && Number(q.get('clients')) > 0) {
    ui.clients.value = String(Number(q.get('clients')));
    ui.clients.dataset.touched = '1';
  }
  if (q.has('fencing')) {
    ui.fencing.checked = q.get('fencing') === '1';
    ui.fencing.dataset.touched = '1';
  }
  ui.speedOut.textContent = speedOf(Number(ui.speed.value)) + '×';
  syncPresent();
  if (q.get('predict') === '1') {
    predicting = true;
    ui.predict.setAttribute('aria-pressed', 'true');
    document.body.dataset.predict = 'true';
  }
  let unknown;
  try {
    unknown = await loadScenarios();
  } catch (err) {
    showError(say('scenario.failed', { why: err.message }));
    return;
  }
  const want = ui.scenario.dataset.initial || '';
  if (!q.get('run') && want.startsWith('edited:')) unknown = await reopenEdited(want.slice('edited:'.length), q.get('definition'));
  if (q.get('run')) {
    await joinRun(q.get('run'), q.get('service') || '');
    return;
  }
  await restart();
  // After the run starts, which clears the error line: a link to a scenario
  // this server does not have says so instead of quietly showing another.
  if (unknown && ui.error.hidden) showError(unknown);
}

main();
