package vsphere

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// The keys of a VM's notes Kustos reads, one KEY=value a line. env-cleaner's spelling and
// Kustos's annotations' are both accepted.
const (
	NoteOwner       = "EC_OWNER"
	NoteTTL         = "EC_TTL"
	NoteKustosOwner = "kustos.io/owner"
	NoteKustosTTL   = "kustos.io/ttl"
)

// MaxNotes bounds the notes ParseNotes reads: vSphere keeps up to 64 KiB; beyond it the rest
// is not read (and said so).
const MaxNotes = 64 << 10

// maxLine bounds one line: a longer one is not metadata.
const maxLine = 1024

// Notes is the lifetime metadata found in a VM's notes: the values as written ("" when absent)
// and the keys they were written under, for messages.
type Notes struct {
	Owner, TTL       string
	OwnerKey, TTLKey string
}

// NoteProblem is one line of the notes Kustos cannot use.
type NoteProblem struct {
	Line  int
	Key   string
	Value string
	Err   string
}

func (p NoteProblem) String() string {
	if p.Key == "" {
		return fmt.Sprintf("line %d: %s", p.Line, p.Err)
	}
	return fmt.Sprintf("line %d: %s=%q: %s", p.Line, p.Key, lifecycle.Clip(p.Value, 64), p.Err)
}

// ErrNotes is what every NoteProblem's error matches (errors.Is), for callers that count them.
var ErrNotes = errors.New("unusable notes")

// ParseNotes reads the owner and the lifetime from a VM's notes. Lines are KEY=value; blank
// lines and lines that are not one of the four keys (free text, other teams' metadata) are left
// alone. The TTL is the expiry detector's grammar (90m, 36h, 1d, 1w2d, never). A line with one
// of the keys and an unusable value is a problem naming the line, and that value is not used;
// so is a key given twice with different values (nobody can tell which one is meant).
func ParseNotes(notes string) (Notes, []NoteProblem) {
	var n Notes
	var problems []NoteProblem
	if len(notes) > MaxNotes {
		problems = append(problems, NoteProblem{Err: fmt.Sprintf("the notes are %d bytes long; only the first %d are read", len(notes), MaxNotes)})
		notes = notes[:MaxNotes]
	}
	owner, ttl := map[string]seen{}, map[string]seen{}
	badOwner, badTTL := false, false
	for i, line := range strings.Split(strings.ReplaceAll(notes, "\r\n", "\n"), "\n") {
		no := i + 1
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		isOwner := key == NoteOwner || strings.EqualFold(key, NoteKustosOwner)
		isTTL := key == NoteTTL || strings.EqualFold(key, NoteKustosTTL)
		if !isOwner && !isTTL {
			if strings.EqualFold(key, NoteOwner) || strings.EqualFold(key, NoteTTL) {
				problems = append(problems, NoteProblem{Line: no, Key: key, Value: value, Err: fmt.Sprintf("keys are upper case: %s or %s", NoteOwner, NoteTTL)})
			}
			continue
		}
		switch {
		case len(line) > maxLine:
			problems = append(problems, NoteProblem{Line: no, Key: key, Value: value, Err: fmt.Sprintf("the line is longer than %d bytes", maxLine)})
			badOwner, badTTL = badOwner || isOwner, badTTL || isTTL
			continue
		case value == "":
			problems = append(problems, NoteProblem{Line: no, Key: key, Err: "the value is empty"})
			badOwner, badTTL = badOwner || isOwner, badTTL || isTTL
			continue
		}
		if isOwner {
			if strings.ContainsAny(value, " \t,;<>\"'") {
				problems = append(problems, NoteProblem{Line: no, Key: key, Value: value, Err: "an owner is one name or email address (no spaces, commas or quotes)"})
				badOwner = true
				continue
			}
			owner[value] = seen{value, no}
			if n.Owner == "" {
				n.Owner, n.OwnerKey = value, key
			}
			continue
		}
		d, never, err := lifecycle.ParseLimit(value)
		if err == nil && !never && d <= 0 {
			err = fmt.Errorf("%w: must be more than 0", lifecycle.ErrDuration)
		}
		if err != nil {
			problems = append(problems, NoteProblem{Line: no, Key: key, Value: value, Err: "not a lifetime (e.g. 12h, 1d, 1w2d, or never): " + err.Error()})
			badTTL = true
			continue
		}
		ttl[value] = seen{value, no}
		if n.TTL == "" {
			n.TTL, n.TTLKey = value, key
		}
	}
	if len(owner) > 1 {
		problems = append(problems, NoteProblem{Line: lastLine(owner), Key: NoteOwner, Value: n.Owner, Err: fmt.Sprintf("%d different owners are given; write one", len(owner))})
		badOwner = true
	}
	if len(ttl) > 1 {
		problems = append(problems, NoteProblem{Line: lastLine(ttl), Key: NoteTTL, Value: n.TTL, Err: fmt.Sprintf("%d different lifetimes are given; write one", len(ttl))})
		badTTL = true
	}
	if badOwner {
		n.Owner, n.OwnerKey = "", ""
	}
	if badTTL {
		n.TTL, n.TTLKey = "", ""
	}
	return n, problems
}

// seen is where a value of a key was first read.
type seen struct {
	value string
	line  int
}

// lastLine is the last line that gave one of the values in m.
func lastLine(m map[string]seen) int {
	last := 0
	for _, s := range m {
		last = max(last, s.line)
	}
	return last
}
