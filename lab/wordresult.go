package lab

import (
	"fmt"
	"strings"
	"time"
)

// Rule names which of zklockviz's word's rules a mismatch breaks (the
// rules and their names are lab/word's).
type Rule string

// Mismatch is one place where zklockviz's word and the clients' differ.
type Mismatch struct {
	Rule    Rule      `json:"rule"`
	Client  string    `json:"client,omitempty"`
	Holder  string    `json:"holder,omitempty"`
	At      time.Time `json:"at"`
	Message string    `json:"message"`
}

func (m Mismatch) String() string {
	who := m.Holder
	if m.Client != "" {
		who = m.Client + " (" + m.Holder + ")"
	}
	if who != "" {
		who += ": "
	}
	return fmt.Sprintf("%s %s: %s%s", m.At.Format("15:04:05.000"), m.Rule, who, m.Message)
}

// WordResult is what lab/word's check of zklockviz's own word found.
type WordResult struct {
	// Grants counts the clients' grants; Checked those recorded or long
	// enough to have to be; Unseen the short ones the reader missed.
	Grants  int `json:"grants"`
	Checked int `json:"checked"`
	Unseen  int `json:"unseen"`
	// Merged counts the grants recorded as part of the same holder's
	// hold before them (see rule 1); Guessed the clean releases recorded
	// as expired when the lease may have run out first (see rule 3).
	Merged  int `json:"merged"`
	Guessed int `json:"guessed"`
	// Holds counts the holds the history recorded; Outages the server's.
	Holds      int        `json:"holds"`
	Outages    int        `json:"outages"`
	Mismatches []Mismatch `json:"mismatches"`
}

func (r WordResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "zklockviz's word: %d grants checked, %d mismatches", r.Checked, len(r.Mismatches))
	if r.Unseen > 0 {
		fmt.Fprintf(&b, "; %d shorter than a read, not recorded", r.Unseen)
	}
	if r.Merged > 0 {
		fmt.Fprintf(&b, "; %d recorded within the same holder's hold before (let go and taken again between two reads)", r.Merged)
	}
	if r.Guessed > 0 {
		fmt.Fprintf(&b, "; %d clean releases recorded as expired, the lease having maybe run out before the reader looked", r.Guessed)
	}
	b.WriteString("\n")
	for i, m := range r.Mismatches {
		if i == maxShown {
			fmt.Fprintf(&b, "and %d more mismatches\n", len(r.Mismatches)-maxShown)
			break
		}
		fmt.Fprintf(&b, "mismatch: %s\n", m)
	}
	return b.String()
}
