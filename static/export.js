// export.js steps through an exported incident's changes, drawing each
// change's lane as the lock page does. The incident file inlines it
// (web/export.go) as a module, and queue.js and tz.js through an import
// map: it runs from file://, with no network.
import { drawQueue, legend, tick, say } from './queue.js';
import './tz.js';

const changes = [...document.querySelectorAll('#changes .change')];
const scrub = document.getElementById('scrub');
const where = document.getElementById('where');
const key = document.getElementById('legend');
if (key) legend(key);
let i = 0;

// draw draws change k's lane, once: the queue it left, its clocks stopped
// at the change.
function draw(k) {
  const c = changes[k];
  const svg = c.querySelector('svg.lane');
  const data = document.getElementById(`snap-${k}`);
  if (!svg || !data || svg.dataset.drawn) return;
  const at = Number(c.dataset.at);
  drawQueue(svg, JSON.parse(data.textContent), { id: `lane-${k}` });
  tick(c, at);
  svg.dataset.drawn = 'true';
}

function show(k) {
  if (!changes.length) {
    where.textContent = say('export.none');
    return;
  }
  i = Math.max(0, Math.min(changes.length - 1, k));
  changes.forEach((c, j) => (c.hidden = j !== i));
  draw(i);
  scrub.value = String(i);
  where.textContent = say('export.at', { n: i + 1, total: changes.length, title: changes[i].querySelector('h2').textContent });
  document.body.dataset.change = String(i);
}
scrub.addEventListener('input', () => show(Number(scrub.value)));
document.getElementById('prev').addEventListener('click', () => show(i - 1));
document.getElementById('next').addEventListener('click', () => show(i + 1));
document.addEventListener('keydown', (e) => {
  const fn = { ArrowLeft: () => show(i - 1), ArrowRight: () => show(i + 1), Home: () => show(0), End: () => show(changes.length - 1) }[e.key];
  if (!fn) return;
  e.preventDefault();
  fn();
});
show(0);
