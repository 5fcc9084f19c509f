package detectkit

import (
	"errors"
	"time"
)

// A resume undoes a pause Kustos made, at its owner's request through a one-time link
// (internal/extension records the request in the target's Lease). The inactivity and expiry
// detectors record their pauses the same way, and accept a link's request by the same rule.

// Why a resume link's request is not recorded (CheckResume).
var (
	// ErrResumeUsed: the link was used already.
	ErrResumeUsed = errors.New("resume link used already")
	// ErrResumeAsked: a resume of this pause was asked already (with another of its links).
	ErrResumeAsked = errors.New("resume asked already")
	// ErrNotPaused: the target is not (or no longer) in the pause the link answers.
	ErrNotPaused = errors.New("not in the pause the link answers")
)

// CheckResume says whether a resume link, used already or not, issued for the pause decided at
// linkPausedAt, may ask to resume a target whose state records the pause decided at pausedAt
// (zero: none) and a resume request at resumeAt (zero: none). The link must answer the pause
// the state records, which no resume was asked of yet.
func CheckResume(used bool, pausedAt, resumeAt, linkPausedAt time.Time) error {
	switch {
	case used:
		return ErrResumeUsed
	case pausedAt.IsZero() || !pausedAt.Equal(linkPausedAt):
		return ErrNotPaused
	case !resumeAt.IsZero():
		return ErrResumeAsked
	}
	return nil
}
