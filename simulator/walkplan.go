package simulator

import "fmt"

// PlanStep is what a service's dry run sees of one step: the action, and
// Fail to refuse it with the step's place in the plan.
type PlanStep struct {
	Action
	// N is the step's number, from 1.
	N int
}

// Fail refuses the step: "step N: action client: why".
func (s PlanStep) Fail(format string, args ...any) error {
	return invalidf("step %d: %s %s: %s", s.N, s.Action.Action, s.Client, fmt.Sprintf(format, args...))
}

// WalkPlan is the frame every other service's dry run shares: each step's
// action passes backend.CheckAction, a client is added once, and a client
// does nothing before it is added (unless anonymous says the step needs no
// client of the run: a wait, a Redlock master's restart); apply then runs
// the service's own model of the lock on the step. anonymous may be nil.
func WalkPlan(b Backend, sc *Scenario, plan []Action, anonymous func(Action) bool, apply func(PlanStep) error) error {
	added := map[string]bool{}
	for i, a := range plan {
		st := PlanStep{Action: a, N: i + 1}
		if err := b.CheckAction(sc, a, false); err != nil {
			return invalidf("step %d: %v", st.N, err)
		}
		switch {
		case IsAdd(a.Action) && added[a.Client]:
			return st.Fail("%s is already in this run", a.Client)
		case IsAdd(a.Action):
			added[a.Client] = true
		case anonymous != nil && anonymous(a):
		case !added[a.Client]:
			return st.Fail("unknown client %s: add it first", a.Client)
		}
		if err := apply(st); err != nil {
			return err
		}
	}
	return nil
}

// What the check before a run may say. A lab asks a student, step by step,
// who holds, whom a client waits for, who is woken, whether a session or a
// key has run out and whether a write lands; a student who writes a plan and
// reads the check's refusal must not read those answers in it. So a dry run
// refuses a plan in the plan's own terms: the step, its action, the rule it
// breaks, and what the plan's own steps did (added, released, crashed,
// paused, expired by an expire step). It never explains a refusal by the
// state the service derives from the steps: not "C3 does not hold the lock:
// it waits for C2", not "C3's session expired". That a client can do
// nothing with a lock at a step is unavoidable to say when the plan asks it
// to, so it is said as the plan's fault (NoLock), without who holds instead.

// NoLock is why a plan's step that needs the lock is refused: "the plan
// gives C3 no lock to release at that step". todo is what the step does
// with it (release, write under…).
func NoLock(client, todo string) string {
	return fmt.Sprintf("the plan gives %s no lock to %s at that step", client, todo)
}

// IsSplitAction says whether action is one only a split plan has (one
// that tells a holder's pause step by step, Split): expire, wake, resume.
func IsSplitAction(action string) bool {
	return action == ActExpire || action == ActWake || action == ActResume
}

// SplitRefused is the frame of the split rules every service's dry run
// shares: a split action in a plan that is not split is refused, and in a
// split plan a client cut off (cut, worded cutOff: "cut off") does nothing
// before its expire step, and one lapsed (paused past lapsedPast: "its
// lease's expiry") nothing but resume.
func (s PlanStep) SplitRefused(split, cut, lapsed bool, cutOff, lapsedPast string) error {
	switch {
	case !split && IsSplitAction(s.Action.Action):
		return s.Fail("%s is for a scenario that tells a pause in steps (with an expire step)", s.Action.Action)
	case split && cut && s.Action.Action != ActExpire:
		return s.Fail("%s is %s: its expire step must come first", s.Client, cutOff)
	case split && lapsed && s.Action.Action != ActResume:
		return s.Fail("%s is paused past %s: only resume can follow", s.Client, lapsedPast)
	}
	return nil
}
