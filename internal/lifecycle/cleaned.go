package lifecycle

import "time"

// Cleaned is the data of the CloudEvent (type io.kustos.cleaner.cleaned) a Cleaner's finished
// cleanup sends: the one shape receivers see. The Cleaner detector fills it; the CloudEvent
// sender delivers it.
type Cleaned struct {
	// Cleaner is the Cleaner, "<namespace>/<name>".
	Cleaner string `json:"cleaner"`
	// Targets are the objects deleted, as <Kind>[.<group>]/<namespace>/<name>.
	Targets []string `json:"targets"`
	// Releases are the helm releases removed (names in the Cleaner's namespace).
	Releases []string `json:"releases"`
	// At is when the cleanup finished.
	At time.Time `json:"at"`
}
