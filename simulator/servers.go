package simulator

// Servers is what a run's servers hold beyond the lock's snapshot, read
// from the servers themselves (never from the classroom's bookkeeping):
// Redlock's masters one by one, and the lock key's time to live as it
// changed during a step.
type Servers struct {
	// Masters are the independent servers a Redlock run spreads its key
	// over, each with its own copy (or none) at the step's end.
	Masters []MasterState `json:"masters,omitempty"`
	// TTL samples the lock key's remaining time during the step (in State:
	// during every step up to the shown one), so a watchdog's renewals
	// draw as a saw-tooth.
	TTL []TTLSample `json:"ttl,omitempty"`
	// TTLMs is the lease the key is given (and renewed to); 0 unknown.
	TTLMs int64 `json:"ttlMs,omitempty"`
}

// MasterState is one master's copy of the lock key.
type MasterState struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	// Up is false while the master is stopped (or being restarted).
	Up bool `json:"up"`
	// Token is the key's value on this master ("" when it has none);
	// Client names the run's client whose token it is.
	Token  string `json:"token,omitempty"`
	Client string `json:"client,omitempty"`
	// LeftMs is the key's PTTL on this master.
	LeftMs int64 `json:"leftMs,omitempty"`
}

// TTLSample is one PTTL read of the lock key.
type TTLSample struct {
	// AtMs is the run's clock (State.ClockMs) when it was read.
	AtMs int64 `json:"atMs"`
	// LeftMs is the key's PTTL; 0 when there is no key.
	LeftMs int64 `json:"leftMs"`
	// Holder names the client whose token the key held ("" none).
	Holder string `json:"holder,omitempty"`
}

// ServerViewer is a World that reads more of its servers than the lock's
// snapshot shows. Servers is called after each step (and before the
// first); its TTL samples are the step's own.
type ServerViewer interface {
	Servers() *Servers
}

// maxTTLSamples bounds the samples a State carries (the latest ones).
const maxTTLSamples = 2000

// serversOf reads w's servers, nil when w has nothing more to show.
func serversOf(w World) *Servers {
	if v, ok := w.(ServerViewer); ok {
		return v.Servers()
	}
	return nil
}

// stateServers is the shown record's servers with the TTL samples of
// every step up to it.
func stateServers(recs []record) *Servers {
	last := recs[len(recs)-1].Servers
	if last == nil {
		return nil
	}
	out := &Servers{Masters: last.Masters, TTLMs: last.TTLMs}
	for _, rec := range recs {
		if rec.Servers != nil {
			out.TTL = append(out.TTL, rec.Servers.TTL...)
		}
	}
	if n := len(out.TTL); n > maxTTLSamples {
		out.TTL = out.TTL[n-maxTTLSamples:]
	}
	return out
}
