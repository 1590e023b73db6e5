// export.js steps through an exported incident's changes. The incident file
// inlines it (web/export.go): it runs from file://, with no network.
(() => {
  const changes = [...document.querySelectorAll('#changes .change')];
  const scrub = document.getElementById('scrub');
  const where = document.getElementById('where');
  let i = 0;
  function show(k) {
    if (!changes.length) {
      where.textContent = 'no changes';
      return;
    }
    i = Math.max(0, Math.min(changes.length - 1, k));
    changes.forEach((c, j) => (c.hidden = j !== i));
    scrub.value = String(i);
    where.textContent = `change ${i + 1} of ${changes.length}: ${changes[i].querySelector('h2').textContent}`;
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
})();
