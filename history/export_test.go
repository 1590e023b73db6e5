package history

import "time"

// Lives folds evs, the window's records after before, into the lives of
// its nodes (LivesFold), for the tests.
func Lives(before State, evs []Event, end time.Time) []Life {
	f := NewLivesFold(before)
	for _, e := range evs {
		f.Add(e)
	}
	return f.Done(end)
}

// StripOf folds evs, the window's records after before, into a strip of
// [from, to] in n buckets (StripFold), for the tests.
func StripOf(before State, evs []Event, from, to time.Time, n int) Strip {
	f := NewStripFold(before, from, to, n)
	for _, e := range evs {
		f.Add(e)
	}
	return f.Done()
}
