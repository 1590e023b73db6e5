package e2e

import (
	"testing"
)

// morph.js patches a live tree into a freshly built one: the result is the
// new tree, and the elements it keeps (by key, or in order) are the same
// objects, so their listeners, focus and layout survive a redraw.
func TestMorphPatchesInPlace(t *testing.T) {
	need(t)
	srv := startServer(t)
	tb := newTab(t)
	tb.open(srv.URL + "/")
	type result struct {
		Name, Got, Want string
		Kept            bool
	}
	got := evalAwait[[]result](tb, `(async () => {
  const { morph } = await import('/static/morph.js');
  const build = (html) => { const t = document.createElement('template'); t.innerHTML = html; return t.content.firstElementChild; };
  const cases = [
    ['a row goes, one comes, the rest shift', '<tbody><tr data-row="a"><td>1</td><td>x</td></tr><tr data-row="b"><td>2</td></tr><tr data-row="c"><td>3</td></tr></tbody>',
      '<tbody><tr data-row="b"><td>1</td></tr><tr data-row="c" class="sel"><td>2</td></tr><tr data-row="d"><td>3</td></tr></tbody>', 'tr[data-row=c]'],
    ['keyed reorder', '<tbody><tr data-row="a"><td>a</td></tr><tr data-row="b"><td>b</td></tr></tbody>',
      '<tbody><tr data-row="b"><td>b</td></tr><tr data-row="a"><td>a</td></tr></tbody>', 'tr[data-row=a]'],
    ['attributes removed and text changed', '<div class="x" title="t"><span>old</span> tail</div>',
      '<div class="y"><span>new</span> tail2</div>', 'span'],
    ['a different element in place', '<div><p>one</p><em>two</em></div>', '<div><p>one</p><b>two</b><i>three</i></div>', 'p'],
    ['svg nodes keyed, edges keyed', '<svg><g data-node="n1" transform="translate(10,0)"><text>n1</text></g><g data-node="n2" transform="translate(20,0)"><text>n2</text></g><path data-kind="rule" data-from="n2" data-to="n1" d="M1"/></svg>',
      '<svg><g data-node="n2" transform="translate(10,0)"><text>n2</text></g><path data-kind="rule" data-from="n3" data-to="n2" d="M2"/><g data-node="n3" transform="translate(20,0)"><text>n3</text></g></svg>', 'g[data-node=n2]'],
  ];
  const out = [];
  for (const [name, from, to, keep] of cases) {
    const live = build(from);
    const kept = live.querySelector(keep);
    morph(live, build(to));
    const after = live.querySelector(keep);
    out.push({ name, got: live.outerHTML, want: build(to).outerHTML, kept: !!kept && kept === after });
  }
  return out;
})()`)
	if len(got) != 5 {
		t.Fatalf("%d results, want 5", len(got))
	}
	for _, r := range got {
		if r.Got != r.Want {
			t.Errorf("%s: morphed into\n%s\nwant\n%s", r.Name, r.Got, r.Want)
		}
		if !r.Kept && r.Name != "a different element in place" {
			t.Errorf("%s: the kept element was replaced, not patched", r.Name)
		}
	}
}
