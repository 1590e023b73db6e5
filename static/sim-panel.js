// sim-panel.js is one classroom run on the page: it starts the run,
// follows its state over the run's websocket, forwards the teacher's acts,
// and draws the run with queue.js, table.js and sim-views.js.

import { drawQueue, drawLocks, animateNotify, animateNotifyParent, tick, say, legend, COL, GROUP_COL, PAD } from './queue.js';
import { QueueTable } from './table.js';
import { closeSocket } from './live.js';
import { apiURL, call } from './sim-api.js';
import { serviceQuery, wordsOf } from './sim-views.js';
import { Quiz, viewerId } from './sim-predict.js';

// runState is a run's State as simulator/run.go sends it, with what the
// page derives once: total, the steps played or planned, whichever is more,
// and the pseudocode's lines. Go sends a nil list as null.
function runState(s) {
  return {
    ...s, total: Math.max(s.steps, s.planned), lines: s.pseudocode.lines || [],
    events: s.events || [], clients: s.clients || [],
  };
}

// READABLE_PX is the smallest a lane's label may be drawn in presentation
// mode: read from the back of a lecture hall; SIDE_READABLE_PX beside
// another run outside it.
const READABLE_PX = 20;
const SIDE_READABLE_PX = 14;

// Panel is one run on the page: its section, its socket, the states it
// received and the one it shows.
//   opts.showTable: whether the run's table starts shown
//   opts.current(gen): whether gen is still the page's generation of runs
//   opts.onState(): a state arrived (the page decides when to show it)
//   opts.onError(msg): say what went wrong; null clears it
//   opts.onAct(client, action): the teacher acts on a client
//   opts.peers(): the herd meters of every run shown, for the bars' scale
//   opts.service: the run's service as the classroom API names it, whose
//     words title the run by its strategy
//   opts.name, opts.title: a run whose waiters choose no strategy is named
//     for its service and titled with how its waiters wait
//   opts.pane: {service, scenario, label} for one pane of scenario 12 (side
//     by side): the run is that service's own scenario, on its ?service=
//   opts.predicting(): whether the page asks each step's questions first
//   opts.open(): whether a run this panel starts is open to all
//   opts.onAnswered(panel): the viewer answered the next step's questions
export class Panel {
  constructor(strategy, compare, opts) {
    this.opts = opts;
    this.strategy = strategy;
    // side is the scenario-12 pane this run is (opts.pane), or null.
    this.side = opts.pane || null;
    // name says which run a message is about; key tells the panes apart.
    this.name = this.side ? this.side.label : opts.name || strategy;
    this.key = this.side ? this.side.scenario : strategy;
    // Every API path of a pane's run names its service, but the default's.
    this.query = this.side ? serviceQuery(this.side.service) : '';
    this.state = null;
    this.selectedClient = '';
    this.selectedNode = '';
    this.queue = [];
    // The run's card is the page's (views/sim.templ, #run-card).
    this.el = document.getElementById('run-card').content.firstElementChild.cloneNode(true);
    this.el.dataset.strategy = strategy;
    this.el.setAttribute('aria-label', say('run.aria', { name: this.name }));
    // A run is titled by its watch strategy in its service's words; a
    // service whose waiters choose none says how they wait instead
    // (ScenarioInfo.waiting).
    const title = opts.title ?? ((wordsOf(opts.service).strategies || {})[strategy] || strategy);
    this.el.querySelector('.run-table').hidden = !opts.showTable;
    this.el.querySelector('.strategy').textContent = this.name;
    // Presentation mode may cut a long name short (app.css): the whole one
    // is the tooltip.
    this.el.querySelector('.strategy').title = this.name;
    this.el.querySelector('.run-title').textContent = this.side ? this.side.scenario : title;
    if (this.side) {
      this.el.classList.add('side-pane');
      this.el.dataset.service = this.side.service;
      this.el.dataset.scenario = this.side.scenario;
      // Each pane's lane in its own service's shapes and words: one
      // legend over five services would be one service's.
      const lg = this.el.querySelector('.pane-legend');
      legend(lg, this.side.service, null);
      lg.hidden = false;
    }
    this.verdictEl = this.el.querySelector('.side-verdict');
    this.metersEl = this.el.querySelector('.side-meters');
    this.narration = this.el.querySelector('.narration');
    this.herd = this.el.querySelector('.herd');
    this.svg = this.el.querySelector('svg.lane');
    this.locksSvg = this.el.querySelector('svg.locks');
    this.cycleNote = this.el.querySelector('.cycle-note');
    this.clientsEl = this.el.querySelector('.clients');
    this.clientsEl.addEventListener('click', (e) => {
      const b = e.target.closest('button.client');
      if (b) this.selectClient(b.dataset.client);
    });
    this.pane = this.el.querySelector('.client-pane');
    this.pane.addEventListener('click', (e) => {
      const b = e.target.closest('.acts button[data-action]');
      if (b) this.opts.onAct(this.selectedClient, b.dataset.action);
    });
    this.eventsEl = this.el.querySelector('.events');
    this.tableEl = this.el.querySelector('.run-table');
    // A step's table and node details are the server's, rendered from
    // the state the run's socket brings with them (web/runframe.go): a
    // page, filter or selection of another view opens the socket on it.
    this.table = new QueueTable(this.tableEl, {
      pageSize: 50,
      onSelect: (n) => this.selectNode(n),
      onQuery: () => this.moveView(),
    });
    // parts are the newest the socket brought: {table, node, nodeName}.
    this.parts = null;
    this.compare = compare;
    // mayControl is whether this browser may move the run: it may a run it
    // started; a run it joins says (GET /runs/{id}: mayControl, controlWhy).
    this.mayControl = true;
    this.controlWhy = '';
    this.joined = false;
    this.quiz = new Quiz(this.el.querySelector('.quiz'), (step, answers) => this.answer(step, answers));
  }

  // predicting says whether this panel asks each step's questions first.
  predicting() {
    return !!(this.opts.predicting && this.opts.predicting());
  }

  // path is an API path of this panel's run (suffix: '/step', ...).
  path(suffix) {
    return `/runs/${encodeURIComponent(this.id)}${suffix}${this.query}`;
  }

  async start(scenario, clients, fencing, gen) {
    // A pane asks its service first: a server that is not installed is
    // said in the scenario list (which package provides it), without a
    // refused start.
    if (this.side) {
      const list = (await call('GET', '/scenarios' + this.query)) || [];
      const info = list.find((x) => x.id === this.side.scenario || x.name === this.side.scenario);
      if (info && info.unavailable) throw new Error(info.unavailable);
    }
    // A lease scenario has no strategy to choose ("children" is its own).
    // A pane runs its service's scenario with that scenario's own settings.
    // An edited scenario (sim-editor.js) is sent whole, as its definition.
    const body = this.side ? { scenario: this.side.scenario } : typeof scenario === 'object' ? { definition: scenario, fencing } : { scenario, fencing };
    if (!this.side && this.strategy !== 'children') body.strategy = this.strategy;
    if (!this.side && clients > 0) body.clients = clients;
    if (this.opts.open && this.opts.open()) body.open = true;
    const raw = await call('POST', '/runs' + this.query, body);
    if (!this.opts.current(gen)) {
      call('DELETE', `/runs/${encodeURIComponent(raw.id)}${this.query}`).catch(() => {});
      return;
    }
    this.id = raw.id;
    this.el.dataset.run = this.id;
    this.accept(raw);
    this.gen = gen;
    this.connect(gen);
  }

  // join follows a run another page started (the page's ?run=): the
  // server says whether this browser may move it. A predicting viewer who
  // may not is held at the steps it answered, from this first answer on.
  async join(id, gen) {
    this.id = id;
    this.joined = true;
    this.el.dataset.run = id;
    // A predicting viewer asks for the state it would be shown if held:
    // until the server says whether this browser may move the run, it
    // must not be sent a step it has not answered.
    const held = this.predicting() ? `${this.query ? '&' : '?'}predict=${viewerId()}&hold=1` : '';
    const raw = await call('GET', this.path('') + held);
    if (!this.opts.current(gen)) return;
    this.mayControl = !!raw.mayControl;
    this.controlWhy = raw.controlWhy || '';
    this.open = !!raw.open;
    this.accept(raw);
    this.gen = gen;
    this.connect(gen);
  }

  // view is what this panel shows beside the state, which the socket's
  // frames bring rendered: the table's page and filter, the selected node;
  // and, predicting, whose questions (held at its answers when this
  // browser may not move the run).
  view() {
    const v = new URLSearchParams({ parts: '1', page: String(Math.max(0, this.table.page)), size: String(this.table.pageSize), q: this.table.filter, selected: this.selectedNode });
    if (this.predicting()) {
      v.set('predict', viewerId());
      if (!this.mayControl) v.set('hold', '1');
    }
    const fit = this.fit();
    if (fit > 0) {
      v.set('fit', String(fit));
      // The server folds; the page knows how wide it draws a fold mark.
      v.set('mark', String(GROUP_COL / COL));
    }
    return v;
  }

  // fitted says whether the lane is fitted to its pane: beside another run
  // or presenting. Alone outside presentation mode it has its own size.
  fitted() {
    return !!this.compare || document.body.dataset.present === 'true';
  }

  // readableScale is the scale at which the lane's smallest label is
  // readable; 0 until a label was drawn to measure.
  readableScale() {
    const px = document.body.dataset.present === 'true' ? READABLE_PX : SIDE_READABLE_PX;
    const sizes = [...this.svg.querySelectorAll('text.label')].map((t) => parseFloat(getComputedStyle(t).fontSize)).filter((x) => x > 0);
    if (sizes.length) this.labelPx = Math.min(...sizes);
    return this.labelPx ? px / this.labelPx : 0;
  }

  // fit is how many node columns the pane shows at a readable size: the
  // server folds a longer lane to it (web/runframe.go, foldRun); 0 asks
  // for the whole lane (not fitted, opened by its fold mark, or nothing
  // drawn yet to measure).
  fit() {
    const box = this.svg.parentElement;
    if (!this.fitted() || this.unfolded || box.hidden || !box.clientWidth) return 0;
    const scale = this.readableScale();
    if (!scale) return 0;
    // A tenth of a column: a fold mark is wider than a node (foldRun).
    return Math.max(1, Math.floor((10 * (box.clientWidth / scale - 2 * PAD)) / COL) / 10);
  }

  // unfold draws the whole lane, scrolled sideways at a readable size: its
  // fold mark was clicked (or chosen with Enter).
  unfold() {
    this.unfolded = true;
    this.moveView();
  }

  // answer sends this browser's answers to a step's questions; a viewer
  // who may move the run then reveals the step (opts.onAnswered).
  async answer(step, answers) {
    try {
      await call('POST', this.path('/answers'), { viewer: viewerId(), step, answers });
    } catch (err) {
      this.opts.onError(say('predict.failed', { why: err.message }));
      return;
    }
    if (this.opts.onAnswered) this.opts.onAnswered(this);
  }

  // moveView opens the socket again on the panel's view, unless it is on
  // it (or the run has no socket to move).
  moveView() {
    const old = this.ws;
    if (!old || this.view().toString() === this.viewKey) return;
    this.ws = null;
    closeSocket(old, 1000, 'view moved');
    this.connect(this.gen);
  }

  connect(gen) {
    if (!this.opts.current(gen) || !this.id) return;
    const u = new URL(apiURL(this.path('/ws')), location.href);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    const view = this.view();
    for (const [k, v] of view) u.searchParams.set(k, v);
    this.viewKey = view.toString();
    this.sentFit = Number(view.get('fit') || 0);
    const ws = new WebSocket(u);
    this.ws = ws;
    this.el.dataset.socket = 'connecting';
    ws.onmessage = (ev) => {
      try {
        this.accept(JSON.parse(ev.data));
      } catch (err) {
        console.error('sim: bad message', err);
      }
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws || !this.opts.current(gen) || this.closed) return;
      this.el.dataset.socket = 'closed';
      // A normal closure is the server saying the run ended: reconnecting
      // would only be refused (404).
      if (ev.code === 1000) {
        this.opts.onError(say('run.ended', { name: this.name }));
        return;
      }
      setTimeout(() => this.connect(gen), 1000);
    };
    ws.onopen = () => (this.el.dataset.socket = 'open');
  }

  // accept takes a State from the socket or from a command's answer.
  accept(raw) {
    if (!raw || typeof raw !== 'object' || raw.id === undefined) return;
    if (this.id && raw.id !== this.id) return;
    // Predicting, the socket's frames are the viewer's (runStep, its
    // questions and answers); a command's answer, a plain state, would
    // show a step without them.
    if (this.predicting() && raw.runStep === undefined) return;
    // A lane the server folds to its pane comes on the socket (view: fit),
    // which brings every state; a command's answer, a plain state, would
    // draw it whole for a moment.
    const framed = typeof raw.table === 'string';
    if (framed) {
      this.folding = this.sentFit > 0 && !!(raw.snapshot && raw.snapshot.window);
      this.awaiting = false;
    } else if (this.folding && this.el.dataset.socket === 'open') {
      // Its frame is still to come when the answer says another step, or
      // a step under way, than the newest state here: the run is still
      // working toward it, so side by side the other runs wait for it
      // (agreed in sim.js).
      const last = this.latest();
      this.awaiting = !last || last.step !== raw.step || !!last.busy !== !!raw.busy;
      return;
    }
    this.queue.push(runState(raw));
    this.opts.onState();
  }

  // waiting says whether an answer told of a state whose frame has not come
  // (while the socket is open to bring it).
  waiting() {
    return !!this.awaiting && this.el.dataset.socket === 'open';
  }

  // latest is the newest state received, shown or not.
  latest() {
    return this.queue.length ? this.queue[this.queue.length - 1] : this.state;
  }

  // animate shows the notifications the new step delivered, on the old
  // drawing: a dot runs from the node whose deletion fired an exists watch to
  // the watcher, or drops from the parent bar for a children watch (the herd).
  async animate(before, after) {
    const pos = this.positions;
    if (!pos) return;
    const nodeOf = new Map(before.clients.map((c) => [c.name, c.node]));
    const ms = Math.max(150, Math.min(900, 650 / (after.speed || 1)));
    const jobs = [];
    for (const e of after.events) {
      if (e.step !== after.step || e.kind !== 'notify') continue;
      // A folded node's notification runs to its fold mark.
      const node = nodeOf.get(e.client);
      const to = pos.has(node) ? pos.get(node) : this.foldX((after.snapshot.notifiedAt || {})[node]);
      if (to === undefined) continue;
      if (e.watch === 'children') jobs.push(animateNotifyParent(this.svg, to, ms));
      else if (pos.has(e.node)) jobs.push(animateNotify(this.svg, pos.get(e.node), to, ms));
    }
    if (!jobs.length) return;
    this.svg.dataset.notifying = String(jobs.length);
    await Promise.all(jobs);
    delete this.svg.dataset.notifying;
  }

  selectClient(name) {
    this.selectedClient = this.selectedClient === name ? '' : name;
    const c = this.state && this.state.clients.find((x) => x.name === this.selectedClient);
    this.selectedNode = c ? c.node || '' : '';
    this.render();
  }

  selectNode(name) {
    const c = this.state && this.state.clients.find((x) => x.node === name || (x.path && x.path.endsWith('/' + name)));
    this.selectedNode = this.selectedNode === name ? '' : name;
    this.selectedClient = this.selectedNode && c ? c.name : '';
    this.render();
  }

  // act asks the simulator to act on a client; it answers the new state, or
  // null when the simulator refused.
  async act(client, action) {
    try {
      this.opts.onError(null);
      const body = { action };
      if (client) body.client = client;
      const raw = await call('POST', this.path('/act'), body);
      this.accept(raw);
      return runState(raw);
    } catch (err) {
      this.opts.onError(`${this.name}: ${action}${client ? ' ' + client : ''}: ${err.message}`);
      return null;
    }
  }

  renderMeta() {
    this.el.dataset.step = this.state.step;
    // The speed the server runs at, as the page shows the run.
    this.el.dataset.speed = String(this.state.speed);
    this.el.dataset.steps = this.state.steps;
    this.el.dataset.playing = String(this.state.playing);
  }

  render() {
    const s = this.state;
    if (!s) return;
    this.renderMeta();
    this.el.dataset.path = s.path || '';
    this.drawHTML(s);
    this.el.dataset.held = String(!!s.held);
    this.quiz.draw(this.predicting() && (s.predict || s.reveal) ? s : null);
    this.el.dataset.busy = String(s.busy);
    this.renderHerd();
    this.el.dataset.clockAt = String(s.clockMs || 0);
    // A scene of several locks draws each (State.locks) in place of the
    // one lock the live reader follows.
    const scene = (s.locks || []).length > 1;
    this.svg.parentElement.hidden = scene;
    this.locksSvg.parentElement.hidden = !scene;
    if (scene) this.renderLocks(s);
    else this.cycleNote.hidden = true;
    if (s.snapshot) {
      if (!scene) {
        this.positions = drawQueue(this.svg, s.snapshot, {
          selected: this.selectedNode, onSelect: (n) => this.selectNode(n), id: 'run-' + this.key, onFold: () => this.unfold(),
        });
      }
      if (typeof s.table === 'string') this.parts = s;
      this.showTable();
    }
    this.drawPane(s);
    if (this.side) this.renderSide(s);
    this.fitLane();
  }

  // drawHTML swaps in what the run's card shows of the state as the
  // server renders it (views.RunParts: the narration, meters, clients,
  // events, pseudocode and wait cycle, each in an element of the card's
  // class, with its data), keeps the client panes for drawPane, and marks
  // the selected client.
  drawHTML(s) {
    const parts = document.createElement('template');
    parts.innerHTML = s.html || '';
    this.panes = parts.content.querySelector('.client-panes');
    if (this.panes) this.panes.remove();
    for (const part of parts.content.children) {
      const to = this.el.querySelector('.' + part.className);
      to.replaceChildren(...part.childNodes);
      Object.assign(to.dataset, part.dataset);
    }
    for (const b of this.clientsEl.children) {
      const on = b.dataset.client === this.selectedClient;
      b.classList.toggle('selected', on);
      b.setAttribute('aria-pressed', String(on));
    }
    this.el.querySelector('.pseudo-box').hidden = !s.lines.length;
    const cur = this.eventsEl.querySelector('li.current');
    if (cur) cur.scrollIntoView({ block: 'nearest' });
  }

  // drawPane shows the selected client's pane of those the server drew
  // (views.RunParts: one per client, by data-client, and the hint for
  // none), or the selected node's details while no client is selected; a
  // client's node the server describes has its details below the client.
  drawPane(s) {
    const c = s.clients.find((x) => x.name === this.selectedClient);
    if (!c && this.selectedNode && s.snapshot) {
      this.pane.replaceChildren();
      this.nodePane(this.pane, s, this.selectedNode);
      return;
    }
    const pane = this.panes && [...this.panes.children].find((x) => x.dataset.client === (c ? c.name : ''));
    this.pane.replaceChildren(...(pane ? pane.cloneNode(true).childNodes : []));
    const more = this.pane.querySelector('.server-details');
    if (more) this.nodePane(more, s, c.node);
    tick(this.pane);
  }

  // foldX is the centre x of the fold mark that holds the queue position
  // at; undefined when none does.
  foldX(at) {
    if (at === undefined) return undefined;
    const g = [...this.svg.querySelectorAll('g.group[data-group]')].find((x) => {
      const [from, to] = x.dataset.group.split('-').map(Number);
      return from <= at && at <= to;
    });
    return g ? g.transform.baseVal.consolidate()?.matrix.e : undefined;
  }

  // fitLane sizes the run's lanes where they are fitted to their pane
  // (Panel.fitted). A run alone in presentation mode (body[data-present])
  // takes the room left above the fold, but never so little that a label
  // is under READABLE_PX, past which it scrolls sideways. A run beside
  // others (compare, side by side) is as wide as its pane: a long lane is
  // folded by the server to what fits there at a readable size
  // (Panel.fit), and only what then still does not fit is scaled down; a
  // lane opened by its fold mark scrolls sideways at a readable size.
  // Outside presentation mode a run alone has its own size. The pane's
  // room is told to the server (moveView) when it changes.
  fitLane() {
    for (const svg of [this.svg, this.locksSvg]) {
      const vb = svg.viewBox.baseVal;
      svg.style.width = svg.style.height = '';
      if (!vb || !vb.width || svg.parentElement.hidden) continue;
      const box = svg.parentElement;
      const folded = svg === this.svg && !!(this.state && this.state.snapshot && this.state.snapshot.window);
      const opened = svg === this.svg && this.unfolded;
      // Beside another run a lane wider than its pane (a 20-client herd)
      // is fitted to it outside presentation mode too: no sideways scroll.
      if (document.body.dataset.present !== 'true' && !(this.compare && (folded || opened || vb.width > box.clientWidth))) continue;
      let scale = box.clientWidth / vb.width;
      if (this.compare && opened) scale = Math.max(scale, this.readableScale() || 1);
      if (!this.compare) {
        const room = window.innerHeight - box.getBoundingClientRect().top - window.scrollY - 8;
        const smallest = Math.min(...[...svg.querySelectorAll('text.label')].map((t) => parseFloat(getComputedStyle(t).fontSize) || 12));
        const readable = Number.isFinite(smallest) ? READABLE_PX / smallest : 1;
        scale = Math.max(readable, Math.min(scale, room / vb.height));
      }
      svg.style.width = `${vb.width * scale}px`;
      svg.style.height = `${vb.height * scale}px`;
    }
    this.moveView();
  }

  // renderLocks draws the scene's locks, one lane each, and the wait cycle
  // across them (State.cycleSteps, its waits in order, its clients named
  // by the server).
  renderLocks(s) {
    this.positions = null; // no notification runs between a scene's lanes
    drawLocks(this.locksSvg, s.locks, s.cycleSteps || [], { selected: this.selectedNode, onSelect: (n) => this.selectNode(n), id: 'run-' + this.key });
    // The cycle's note is the server's (views.RunParts), empty without one.
    this.cycleNote.hidden = !this.cycleNote.children.length;
  }

  // unavailable shows why a pane's run could not start (its server is not
  // installed, or its service has no classroom here); the other panes go on.
  unavailable(why) {
    this.failed = why;
    this.el.dataset.unavailable = 'true';
    this.narration.textContent = say('run.unavailable', { why });
    this.verdictEl.hidden = false;
    this.verdictEl.dataset.exclusion = 'unavailable';
    this.verdictEl.textContent = say('run.unavailableBadge');
    this.verdictEl.title = why;
  }

  // renderSide shows the pane's verdict badge and its meters, which the
  // server draws (views.RunParts, from State.verdict and State.meters: the
  // simulator judges and counts, the same for every service).
  renderSide(s) {
    this.el.querySelector('.run-title').textContent = s.title || this.side.scenario;
    this.verdictEl.hidden = this.metersEl.hidden = false;
  }

  // showTable shows the newest table the socket brought, while shown.
  showTable() {
    if (!this.tableEl.hidden && this.parts && this.state) this.table.framed(this.state.snapshot, this.selectedNode, this.parts.table);
  }

  // nodePane fills root with the server's details of name in s, which the
  // socket brings for the selected node; for another node it moves the
  // socket to it, and the frame that brings them draws them.
  nodePane(root, s, name) {
    const p = this.parts;
    if (!p || p.nodeName !== name) {
      this.moveView();
      return;
    }
    root.innerHTML = p.node;
    tick(root);
  }

  // renderHerd scales the run's bars (views.RunParts: each with its own
  // end) to the largest figure the runs on the page show on the same meter,
  // where that is more: the server words the bar's title for that figure
  // too (data-wider), which only the page knows.
  renderHerd() {
    for (const m of this.herd.querySelectorAll('.meter')) {
      const bar = m.querySelector('.bar');
      const end = Number(bar.dataset.end);
      const peers = this.opts.peers().map((h) => h.querySelector(`.meter[data-meter="${m.dataset.meter}"]`));
      const max = Math.max(end, ...peers.map((p) => Number(p ? p.dataset.value : 0)));
      bar.dataset.own ??= bar.title;
      bar.title = max > end ? say(bar.dataset.wider, { max }) : bar.dataset.own;
      bar.dataset.max = max;
      bar.firstElementChild.style.width = `${Math.round((100 * Number(m.dataset.value)) / max)}%`;
    }
  }

  // close ends the panel's run; the promise settles once the server has
  // deleted it.
  close() {
    this.closed = true;
    const closed = this.ws ? closeSocket(this.ws, 1000, 'done') : Promise.resolve();
    // A joined run is its starter's to delete.
    if (!this.id || this.joined) return closed;
    // Delete the run once its socket is closed: a socket still connecting
    // to a deleted run is refused (404), which the browser logs as an error.
    return closed.then(() => call('DELETE', this.path(''))).catch(() => {});
  }
}
