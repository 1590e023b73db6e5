package simulator

import "slices"

// Branch is where a run stands against its scenario's script once a
// client was acted on off it (a what-if): the script's remaining steps are
// kept, and ToScript goes back to the step the branch left it at and plays
// them on.
type Branch struct {
	// From is the step the branch left the script at: the step shown when
	// the first act was taken. ToScript shows that step again.
	From int `json:"from"`
	// Script is how many steps the script plans; Left how many of them
	// come after From, which ToScript plays on.
	Script int `json:"script"`
	Left   int `json:"left"`
	// Kept says whether the branch itself still plays those steps after
	// its acts (they still fit after them); when not, the branch ends with
	// its acts and only ToScript plays them.
	Kept bool `json:"kept"`
}

// leaveScript notes an act taken at step cursor. The branch starts at the
// earliest step acted at since the run last followed its script: the plan
// before it is still the script's. mu must be held.
func (r *Run) leaveScript(cursor int) {
	if r.branchFrom < 0 || cursor < r.branchFrom {
		r.branchFrom = cursor
	}
}

// branch is the run's Branch, nil while it follows its script. mu must be
// held.
func (r *Run) branch() *Branch {
	if r.branchFrom < 0 {
		return nil
	}
	rest := r.script[r.branchFrom:]
	return &Branch{
		From: r.branchFrom, Script: len(r.script), Left: len(rest),
		Kept: len(r.plan) > len(r.script) && slices.Equal(r.plan[len(r.plan)-len(rest):], rest),
	}
}

// ToScript leaves a what-if branch: it replays the script up to the step
// the branch left it at on a fresh lock path, shows that step, and plans
// the script's remaining steps again. What the branch did is dropped. It
// pauses playback.
func (r *Run) ToScript() error {
	r.Pause()
	if err := r.usable(); err != nil {
		return err
	}
	r.opMu.Lock()
	defer r.opMu.Unlock()
	r.mu.Lock()
	from := r.branchFrom
	r.mu.Unlock()
	if from < 0 {
		return conflictf("the run follows its script: there is no what-if branch to leave")
	}
	// The branch's plan up to from is the script's (leaveScript), so the
	// replay is the script's own.
	if err := r.fork(from); err != nil {
		return err
	}
	r.mu.Lock()
	r.plan = slices.Clone(r.script)
	r.branchFrom = -1
	r.mu.Unlock()
	r.bump()
	return nil
}
