// morph.js turns a live DOM tree into a freshly built one by changing only
// what differs, so a redraw costs the browser style and layout for what
// changed rather than for every element: scrubbing the time bar redraws the
// lane and the table many times a second, and between two moments a queue
// mostly keeps its nodes.

// keyOf names an element among its siblings across redraws: a lane's node
// or fold (g), an edge (path), a table row (tr). Other elements are matched
// in order, and asked nothing: most of a redraw is theirs.
export function keyOf(el) {
  const tag = el.localName;
  if (tag !== 'g' && tag !== 'path' && tag !== 'tr') return undefined;
  let k = el.getAttribute('data-node');
  if (k !== null) return 'node ' + k;
  if ((k = el.getAttribute('data-row')) !== null) return 'row ' + k;
  if ((k = el.getAttribute('data-group')) !== null) return 'group ' + k;
  if ((k = el.getAttribute('data-from')) !== null) return `edge ${el.getAttribute('data-kind')} ${k} ${el.getAttribute('data-to')}`;
  return undefined;
}

// morph makes live's attributes and children those of next, reusing live's
// elements (and so their listeners, focus and layout) where the tag and key
// match; next's unmatched nodes are moved in. next is consumed.
export function morph(live, next, key = keyOf) {
  // The browser compares whole subtrees natively, far faster than a walk
  // from script: most of a redraw is subtrees that did not change.
  if (live.isEqualNode(next)) return;
  syncAttributes(live, next);
  if (!next.firstElementChild && !live.firstElementChild) {
    if (live.textContent !== next.textContent) live.textContent = next.textContent;
    return;
  }
  morphChildren(live, next, key);
}

function syncAttributes(live, next) {
  for (const a of [...live.attributes]) if (!next.hasAttribute(a.name)) live.removeAttribute(a.name);
  for (const a of next.attributes) if (live.getAttribute(a.name) !== a.value) live.setAttribute(a.name, a.value);
}

const same = (a, b) =>
  a.nodeType === b.nodeType && (a.nodeType !== Node.ELEMENT_NODE || (a.localName === b.localName && a.namespaceURI === b.namespaceURI));

// aligned reports whether a and b pair up in order, node for node: the
// common case below the keyed layers (a node's shapes, a row's cells), which
// is morphed pairwise without the keyed bookkeeping.
function aligned(a, b, key) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (!same(a[i], b[i])) return false;
    if (a[i].nodeType === Node.ELEMENT_NODE && key(a[i]) !== key(b[i])) return false;
  }
  return true;
}

function morphChildren(live, next, key) {
  const a = live.childNodes;
  const b = next.childNodes;
  if (aligned(a, b, key)) {
    for (let i = 0; i < a.length; i++) {
      if (a[i].nodeType === Node.ELEMENT_NODE) morph(a[i], b[i], key);
      else if (a[i].nodeValue !== b[i].nodeValue) a[i].nodeValue = b[i].nodeValue;
    }
    return;
  }
  const keyed = new Map();
  const unkeyed = [];
  for (const c of live.childNodes) {
    const k = c.nodeType === Node.ELEMENT_NODE ? key(c) : undefined;
    if (k === undefined) unkeyed.push(c);
    else keyed.set(k, c);
  }
  const used = new Set();
  const result = [];
  let u = 0;
  for (const n of [...next.childNodes]) {
    const k = n.nodeType === Node.ELEMENT_NODE ? key(n) : undefined;
    let m = k === undefined ? unkeyed[u] : keyed.get(k);
    if (m && (used.has(m) || !same(m, n))) m = undefined;
    else if (m && k === undefined) u++;
    if (!m) {
      result.push(n);
      continue;
    }
    used.add(m);
    result.push(m);
    if (n.nodeType === Node.ELEMENT_NODE) morph(m, n, key);
    else if (m.nodeValue !== n.nodeValue) m.nodeValue = n.nodeValue;
  }
  // Dropping what goes first leaves the kept nodes in their order, so only
  // the new ones are inserted: moving a kept node would rebuild its layout.
  for (const c of [...live.childNodes]) if (!used.has(c)) c.remove();
  let ref = live.firstChild;
  for (const r of result) {
    if (r === ref) ref = ref.nextSibling;
    else live.insertBefore(r, ref);
  }
}
