package metrics_test

import (
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/metrics"
)

// A Curator semaphore's pending acquirer owns two nodes (its lease node
// and its node in locks/): the gauges count it once, as one waiter.
func TestSemaphoreGaugesCountContenders(t *testing.T) {
	const uuid = "-2fa1-11d2-883f-0016d3cca427"
	lease := func(who string, seq int64) string { return lockqueue.SeqName("_c_"+who+uuid+"-lease-", seq) }
	lock := func(who string, seq int64) string { return lockqueue.SeqName("_c_"+who+uuid+"-lock-", seq) }
	s := lockqueue.Build("/pool", []lockqueue.Child{
		{Folder: "/pool/leases", Name: lease("aaaaaaaa", 0), EphemeralOwner: 1, Czxid: 101},
		{Folder: "/pool/leases", Name: lease("bbbbbbbb", 1), EphemeralOwner: 2, Czxid: 103},
		{Folder: "/pool/locks", Name: lock("cccccccc", 2), EphemeralOwner: 3, Czxid: 106},
		{Folder: "/pool/leases", Name: lease("cccccccc", 2), EphemeralOwner: 3, Czxid: 107},
		{Folder: "/pool/locks", Name: lock("dddddddd", 3), EphemeralOwner: 4, Czxid: 108},
	}, lockqueue.Options{Semaphore: lockqueue.Curator})
	s.Connection = lockqueue.Connected
	h := hub.New()
	h.Publish(s)
	got := scrape(t, metrics.Handler(metrics.Config{Hub: h, Now: time.Now}))
	for name, want := range map[string]float64{
		"zklockviz_lock_holders":      2,
		"zklockviz_lock_waiters":      2,
		"zklockviz_lock_queue_length": 4,
	} {
		if v, ok := value(t, got, name, map[string]string{"path": "/pool"}); !ok || v != want {
			t.Errorf("%s = %v (present %t), want %v: one per contender", name, v, ok, want)
		}
	}
}
