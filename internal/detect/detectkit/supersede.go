package detectkit

import (
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// LaterEvidence is the Supersedes rule of a detector whose Changes name the cycle they belong
// to by a time in their first evidence entry (key: the expiry detector's "deadline", the
// inactivity detector's "idleSince"): a Change of a later cycle, or of another kind of edit,
// replaces a declined or open one; the same cycle again does not. The times are compared as
// times, not as text: two writers of one instant (another offset, another precision) are one
// cycle. A Change whose time is missing or unreadable replaces the old one, as a Change that
// names no cycle always has.
func LaterEvidence(key string) func(newer, old lifecycle.Change) (lifecycle.Change, bool) {
	return func(newer, old lifecycle.Change) (lifecycle.Change, bool) {
		tn, okNew := evidenceTime(newer, key)
		if !okNew || newer.Edit.Op != old.Edit.Op {
			return newer, true
		}
		to, okOld := evidenceTime(old, key)
		return newer, !okOld || tn.After(to)
	}
}

// evidenceTime reads the time under key of c's first evidence entry (RFC 3339).
func evidenceTime(c lifecycle.Change, key string) (time.Time, bool) {
	if len(c.Evidence) == 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, c.Evidence[0][key])
	return t, err == nil
}
