package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// contender joins a lock queue under path with a node named as its library
// names them (prefix, then ZooKeeper's sequence), ephemeral, holding data,
// on its own session; when waiting it sets the exists watch its recipe sets.
// It returns the node's name.
func contender(t *testing.T, path, prefix, data, watch string) string {
	t.Helper()
	c := connect(t)
	full, err := c.Create(path+"/"+prefix, []byte(data), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatalf("create %s under %s: %v", prefix, path, err)
	}
	if watch != "" {
		if _, _, _, err := c.ExistsW(path + "/" + watch); err != nil {
			t.Fatalf("exists watch on %s: %v", watch, err)
		}
	}
	return full[len(path)+1:]
}

// A lock view of a real-looking queue (long library names, pod host names as
// data, every waiter naming the long node it waits for and watches) fits a
// 1,280 px window: the page does not scroll sideways, and neither does the
// table inside it. Nothing is cut: a node named in another row reads as the
// lane labels it, its full name in the tooltip.
func TestLockTableFits1280(t *testing.T) {
	need(t)
	host := func(i int) string {
		return fmt.Sprintf("orders-service-7d9f8c6b5-x%d9k.prod.eu-west-1.compute.internal/10.244.17.%d", i, 200+i)
	}
	for _, tc := range []struct {
		name  string
		queue func(path string) []string
	}{
		// Curator's InterProcessReadWriteLock: "_c_<uuid>-__READ__<seq>".
		// Two readers hold; a writer waits for its immediate predecessor, a
		// reader for the first writer.
		{"curator", func(path string) []string {
			uuid := func(i int) string { return fmt.Sprintf("_c_8f3a1b2c-%04x-4d2e-9b7a-%012x-", i, i*0x1f2e3d4c5b) }
			r1 := contender(t, path, uuid(1)+"__READ__", host(1), "")
			r2 := contender(t, path, uuid(2)+"__READ__", host(2), "")
			w3 := contender(t, path, uuid(3)+"__WRIT__", host(3), r2)
			w4 := contender(t, path, uuid(4)+"__WRIT__", host(4), w3)
			r5 := contender(t, path, uuid(5)+"__READ__", host(5), w3)
			r6 := contender(t, path, uuid(6)+"__READ__", host(6), w3)
			w7 := contender(t, path, uuid(7)+"__WRIT__", host(7), r6)
			return []string{r1, r2, w3, w4, r5, r6, w7}
		}},
		// kazoo's Lock: "<32 hex>__lock__<seq>", each waiter on the one
		// before; no hyphen to wrap at.
		{"kazoo", func(path string) []string {
			var q []string
			for i := range 7 {
				prev := ""
				if i > 0 {
					prev = q[i-1]
				}
				q = append(q, contender(t, path, fmt.Sprintf("3f9c%04x7b1e4d2a9c5e%012x__lock__", i+1, (i+1)*0x1f2e3d4c5b), host(i), prev))
			}
			return q
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/e2e/locks/orders-service/inventory-reservations-" + tc.name
			ensurePath(t, connect(t), path)
			q := tc.queue(path)
			srv := startServer(t, "--watch", path)
			tb := newTab(t)
			tb.do("a 1280 px window", chromedp.EmulateViewport(1280, 900))
			tb.open(srv.URL + "/lock?path=" + path)
			tb.until("the table's rows", fmt.Sprintf(`document.querySelectorAll('#table tbody tr').length === %d && document.body.dataset.live === 'true'`, len(q)))
			tb.until("every watch confirmed", `[...document.querySelectorAll('#table tbody tr')].filter(r => r.dataset.state === 'waiting').every(r => r.textContent.includes('confirmed'))`)

			got := eval[map[string]float64](tb, `(() => {
				const d = document.documentElement;
				const wrap = document.querySelector('#table .table-wrap');
				return {page: d.scrollWidth, window: d.clientWidth, table: wrap.scrollWidth, room: wrap.clientWidth};
			})()`)
			if got["page"] > got["window"] {
				t.Errorf("the page is %.0f px wide in a %.0f px window: it scrolls sideways", got["page"], got["window"])
			}
			if got["table"] > got["room"] {
				t.Errorf("the table needs %.0f px and has %.0f: it scrolls sideways inside the page", got["table"], got["room"])
			}
			// Every name is there whole in its own row, and in full in the
			// tooltip of a row that names it.
			rows := eval[[]string](tb, `[...document.querySelectorAll('#table tbody td.name')].map(c => c.innerText.replace(/\s/g, ''))`)
			if strings.Join(rows, " ") != strings.Join(q, " ") {
				t.Errorf("node column %v, want %v", rows, q)
			}
			last := q[len(q)-1]
			titles := eval[[]string](tb, `[...document.querySelectorAll(`+jsString(fmt.Sprintf(`#table tbody tr[data-row=%q] td [title]`, last))+`)].map(e => e.title)`)
			if len(titles) == 0 || titles[0] != q[len(q)-2] {
				t.Errorf("%s waits for %s: the cells name %v in full", last, q[len(q)-2], titles)
			}
		})
	}
}
