package activity

import (
	"regexp"
	"sort"
	"sync"
	"time"
)

// Tracker remembers what the check cycles have seen, for the detector to read between them:
// per source, the last activity per target and since when its silence is evidence. It is safe
// for concurrent use (one checker writes, many reconciles read).
type Tracker struct {
	// Lookback is how far back the first check of a source looks (--activity-lookback): the
	// history Prometheus keeps. Silence before that is never evidence.
	Lookback time.Duration

	mu        sync.RWMutex
	checkedAt time.Time
	sources   []*sourceState
	byName    map[string]*sourceState
}

type sourceState struct {
	name   string
	status Status
	detail string
	// lastOK is the evaluation time of the last ok answer; the next window reaches back to it.
	lastOK time.Time
	// coveredSince: from then on the source collected, so no activity in its data means none.
	coveredSince time.Time
	// gap: the source was unavailable since lastOK; its coverage restarts when it answers again.
	gap  bool
	last map[Ref]time.Time
}

// Window is how far back the next check must look at now: the lookback until every source
// answered once, then back to the oldest last answer (plus margin, so nothing between two
// checks falls through), never more than the lookback.
func (t *Tracker) Window(now time.Time, margin time.Duration, names []string) time.Duration {
	t.mu.RLock()
	defer t.mu.RUnlock()
	w := time.Duration(0)
	for _, n := range names {
		s := t.byName[n]
		if s == nil || s.lastOK.IsZero() {
			return t.Lookback
		}
		if d := now.Sub(s.lastOK) + margin; d > w {
			w = d
		}
	}
	if w <= 0 || w > t.Lookback {
		return t.Lookback
	}
	return w
}

// Observe records a check's result.
func (t *Tracker) Observe(r Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byName == nil {
		t.byName = map[string]*sourceState{}
	}
	t.checkedAt = r.At
	seen := map[string]bool{}
	for _, sr := range r.Sources {
		seen[sr.Name] = true
		s := t.byName[sr.Name]
		if s == nil {
			s = &sourceState{name: sr.Name, last: map[Ref]time.Time{}}
			t.byName[sr.Name] = s
			t.sources = append(t.sources, s)
		}
		s.status, s.detail = sr.Status, sr.Detail
		switch sr.Status {
		case StatusOK:
			switch {
			case s.gap:
				// It was not collecting for a while: its data may have a hole there.
				s.coveredSince, s.gap = r.At, false
			case s.coveredSince.IsZero():
				s.coveredSince = r.At.Add(-r.Window)
			case r.At.Add(-r.Window).After(s.lastOK):
				// The window, capped at the lookback, did not reach back to the last ok
				// answer (an outage longer than the lookback: Prometheus unreachable, partial
				// answers, this replica not the leader): the time in between was never
				// queried, so silence counts only from the window's start.
				s.coveredSince = r.At.Add(-r.Window)
			}
			// A break inside the window (the exporter is new, or it, or Prometheus, was
			// down between two checks): its silence counts only from after the break.
			if sr.CollectingSince.After(s.coveredSince) {
				s.coveredSince = sr.CollectingSince
			}
			s.lastOK = r.At
			for ref, at := range sr.Last {
				if at.After(s.last[ref]) {
					s.last[ref] = at
				}
			}
			// Forget what is older than the lookback: the target's Lease keeps its last
			// activity, and this map must not grow with every environment ever seen.
			for ref, at := range s.last {
				if r.At.Sub(at) > t.Lookback {
					delete(s.last, ref)
				}
			}
		case StatusUnavailable:
			s.gap = true
		case StatusError, StatusPartial:
			// Prometheus was not reached, or answered only in part: the data is still being
			// collected (a Thanos store that was down is back with its series), the next ok
			// answer looks back to lastOK and covers the time in between.
		}
	}
	// A source removed from the configuration is forgotten.
	kept := t.sources[:0]
	for _, s := range t.sources {
		if seen[s.name] {
			kept = append(kept, s)
		} else {
			delete(t.byName, s.name)
		}
	}
	t.sources = kept
}

// SourceStatus is one source's state for one target's decision.
type SourceStatus struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Last is the target's last activity this source saw within what the tracker remembers
	// (the lookback); zero: none. A pause's evidence shows it per source.
	Last time.Time `json:"last,omitzero"`
}

// Activity is what is known of one target's use.
type Activity struct {
	// CheckedAt is the last check; zero: none yet (nothing is known).
	CheckedAt time.Time
	// Last is the latest activity any source saw (zero: none within what they cover).
	Last time.Time
	// CoveredSince: every source has collected since then, so no activity since then means
	// none. Zero when not every source is covered.
	CoveredSince time.Time
	// Sources are the sources' states, in configuration order.
	Sources []SourceStatus
}

// Known: every source answered ok at the last check. Only then can a target be inactive.
func (a Activity) Known() bool {
	if a.CheckedAt.IsZero() || len(a.Sources) == 0 {
		return false
	}
	for _, s := range a.Sources {
		if s.Status != StatusOK {
			return false
		}
	}
	return !a.CoveredSince.IsZero()
}

// Lookup is a target's activity; refs are its Ref per source name (Compiled.RefOf).
func (t *Tracker) Lookup(refs map[string]Ref) Activity {
	t.mu.RLock()
	defer t.mu.RUnlock()
	a := Activity{CheckedAt: t.checkedAt}
	allCovered := len(t.sources) > 0
	for _, s := range t.sources {
		a.Sources = append(a.Sources, SourceStatus{Name: s.name, Status: s.status, Detail: s.detail})
		ref, ok := refs[s.name]
		if !ok {
			allCovered = false
			continue
		}
		a.Sources[len(a.Sources)-1].Last = s.last[ref]
		if at := s.last[ref]; at.After(a.Last) {
			a.Last = at
		}
		if s.coveredSince.IsZero() {
			allCovered = false
		} else if s.coveredSince.After(a.CoveredSince) {
			a.CoveredSince = s.coveredSince
		}
	}
	if !allCovered {
		a.CoveredSince = time.Time{}
	}
	return a
}

// Summary is the tracker's state for status pages and tests: per source, its status and the
// number of targets it has seen active.
func (t *Tracker) Summary() map[string]int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[string]int, len(t.sources))
	for _, s := range t.sources {
		out[s.name] = len(s.last)
	}
	return out
}

// Names are the names of the sources, in order.
func Names(sources []Compiled) []string {
	out := make([]string, 0, len(sources))
	for _, s := range sources {
		out = append(out, s.Name)
	}
	return out
}

// SortedRefs lists a source result's targets in a stable order (tests, plan output).
func SortedRefs(m map[Ref]time.Time) []Ref {
	out := make([]Ref, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// userinfo is everything between a scheme and the last @ before the next blank or quote: a
// password with an unencoded / or @ in it is covered too; an @ later in a path or query makes
// it hide more than the credentials, never less.
var userinfo = regexp.MustCompile(`://[^\s"]*@`)

// redact removes credentials from URLs in a message (a Prometheus URL with basic auth).
func redact(s string) string { return userinfo.ReplaceAllString(s, "://***@") }
