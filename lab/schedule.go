package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A schedule file is a JSON list of Faults, as the lab's report and
// --search write them: at and for in nanoseconds (a time.Duration's own
// JSON). A person writing one by hand may give them as Go durations
// ("2.5s") instead.

// ParseSchedule reads a schedule file and checks it (CheckSchedule).
func ParseSchedule(b []byte) ([]Fault, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("schedule: the file is empty: want a JSON list of faults, [] for none")
	}
	var raw []struct {
		At   json.RawMessage `json:"at"`
		Kind string          `json:"kind"`
		Pick int             `json:"pick"`
		For  json.RawMessage `json:"for"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("schedule: want a JSON list of {at, kind, pick, for}: %w", err)
	}
	out := make([]Fault, 0, len(raw))
	for i, r := range raw {
		at, err := scheduleDuration(r.At)
		if err != nil {
			return nil, fmt.Errorf("schedule: fault %d: at: %w", i+1, err)
		}
		d, err := scheduleDuration(r.For)
		if err != nil {
			return nil, fmt.Errorf("schedule: fault %d: for: %w", i+1, err)
		}
		out = append(out, Fault{At: at, Kind: r.Kind, Pick: r.Pick, For: d})
	}
	if err := CheckSchedule(out); err != nil {
		return nil, err
	}
	return out, nil
}

// scheduleDuration reads a duration as nanoseconds or as "2.5s"; absent
// is 0.
func scheduleDuration(m json.RawMessage) (time.Duration, error) {
	if len(m) == 0 || string(m) == "null" {
		return 0, nil
	}
	var ns int64
	if err := json.Unmarshal(m, &ns); err == nil {
		return time.Duration(ns), nil
	}
	var s string
	if err := json.Unmarshal(m, &s); err != nil {
		return 0, fmt.Errorf("%s: want nanoseconds or a duration such as \"2.5s\"", m)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want a duration such as \"2.5s\"", s)
	}
	return d, nil
}

// CheckSchedule says what is wrong with a schedule, if anything: a fault
// Run does not know, a time before the start or out of order (the runner
// does faults in the order given, one at a time), a pause of no length.
func CheckSchedule(s []Fault) error {
	for i, f := range s {
		switch {
		case !slices.Contains(Nemeses, f.Kind):
			return fmt.Errorf("schedule: fault %d: unknown kind %q: want one of %s", i+1, f.Kind, strings.Join(Nemeses, ", "))
		case f.At < 0:
			return fmt.Errorf("schedule: fault %d: at %v: want 0 or more", i+1, f.At)
		case i > 0 && f.At < s[i-1].At:
			return fmt.Errorf("schedule: fault %d at %v comes before fault %d at %v: want them in order", i+1, f.At, i, s[i-1].At)
		case f.Pick < 0:
			return fmt.Errorf("schedule: fault %d: pick %d: want 0 or more", i+1, f.Pick)
		case f.For < 0, f.Kind == Pause && f.For == 0:
			return fmt.Errorf("schedule: fault %d: a %s for %v: want a positive duration", i+1, f.Kind, f.For)
		}
	}
	return nil
}

// MarshalSchedule is a schedule file: one fault a line, so that a diff of
// two reads fault by fault.
func MarshalSchedule(s []Fault) []byte {
	var b bytes.Buffer
	b.WriteString("[")
	for i, f := range s {
		line, _ := json.Marshal(f) // a Fault always marshals
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	if len(s) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// FormatSchedule is a schedule in words, a fault a line.
func FormatSchedule(s []Fault) string {
	if len(s) == 0 {
		return "  no faults\n"
	}
	var b strings.Builder
	for _, f := range s {
		fmt.Fprintf(&b, "  at %v: %s (pick %d)", f.At, f.Kind, f.Pick)
		if f.For > 0 {
			fmt.Fprintf(&b, " for %v", f.For)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// ScheduleEnd is when the schedule's last fault is over, from the start
// of the run, if it strikes on time.
func ScheduleEnd(s []Fault) time.Duration {
	var end time.Duration
	for _, f := range s {
		end = max(end, f.At+f.For)
	}
	return end
}
