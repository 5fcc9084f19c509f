package lifecycle

// Finding is something a detector noticed that people should know about but that changes
// nothing: a workload missing a resource field, a value that cannot be read. The pipeline reports
// each one once per ID (a Warning Event and a log line).
type Finding struct {
	// Regarding is the object the finding is about; empty means the Change's target.
	Regarding *Target
	// UID of Regarding, when known (Events link to it).
	UID string
	// Reason is a CamelCase machine reason (the Event reason).
	Reason string
	// Message is one human sentence.
	Message string
	// ID identifies what is reported: the same ID is reported once.
	ID string
	// Notice, when set, is also sent to the people it names (after the Event).
	Notice *Notice
}

// Outcome is what carrying out a Change did.
type Outcome struct {
	// Proposal is set when the Change became a proposal that people review (PR mode); the
	// pipeline then follows it. Nil when the Change was carried out at once (observe, direct).
	Proposal *Proposal
	// Applied: the Change was made to the cluster itself (direct); false for a report.
	Applied bool
}

// Clip cuts s to n runes, with an ellipsis, for values quoted in Events, logs and errors:
// input a user controls must never make a message unbounded.
func Clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
