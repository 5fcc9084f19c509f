package inactivity

import (
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// A resume undoes a pause Kustos made: its owner asks with a resume link (carried out by
// internal/extension, which records the request in the target's Lease), and the next look
// restores the value the pause field held when the pause was decided, through the same
// pipeline as the pause (a pull request for what Git defines, a preconditioned patch
// otherwise, nothing in observer mode, which paused nothing).

// PauseFieldName names the field a pause sets, as the state records it: spec.replicas when the
// target is scaled to zero, the pause field otherwise.
func PauseFieldName(p Pause) string {
	return lifecycle.PathString(pausePath(p))
}

func pausePath(p Pause) []string {
	if len(p.Field) == 0 {
		return []string{"spec", "replicas"}
	}
	return p.Field
}

// pauseValue is the value a pause sets, in its Kubernetes string form.
func pauseValue(p Pause) string {
	if len(p.Field) == 0 {
		return "0"
	}
	return p.Value
}

// recordPause records, with the pause just decided, what it changes: the field, the value it
// holds now and when. A deletion, or a field without a value to restore, records nothing.
func recordPause(s Snapshot, st *State) {
	if s.Policy.Action == ActionDelete || s.PauseFrom == "" || s.PauseFrom == pauseValue(s.Settings.Pause) {
		forgetPause(st)
		return
	}
	st.PausedAt, st.PauseField, st.PauseFrom = s.Now.UTC().Truncate(time.Second), PauseFieldName(s.Settings.Pause), s.PauseFrom
	st.ResumeAt = time.Time{}
}

// forgetPause drops the pause record and a resume request of it; the used link ids stay.
func forgetPause(st *State) {
	st.PausedAt, st.PauseField, st.PauseFrom, st.ResumeAt = time.Time{}, "", "", time.Time{}
}
