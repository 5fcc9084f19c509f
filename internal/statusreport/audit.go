package statusreport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/extension"
)

// ownerActionOf is the action of each owner-action Event reason Kustos writes.
var ownerActionOf = map[string]string{
	extension.ReasonOwnerExtended: "extend",
	extension.ReasonOwnerKept:     "keep",
	extension.ReasonOwnerResumed:  "resume",
}

// kustosComponent is the component Kustos writes its Events as: an Event of the same reason by
// anyone else is not an action Kustos carried out.
const kustosComponent = "kustos"

// DefaultOwnerActions is how many of the last owner actions `kustos status` lists.
const DefaultOwnerActions = 5

// OwnerAction is one action an owner took through a link (an extension, a keep, a resume).
type OwnerAction struct {
	Action string `json:"action"`
	// Target is kind[.group]/namespace/name, as the rows name it.
	Target string    `json:"target"`
	At     time.Time `json:"at"`
}

// OwnerActions is the audit of owner actions: how many of each, and the last few, newest first.
type OwnerActions struct {
	Counts map[string]int `json:"counts"`
	Last   []OwnerAction  `json:"last"`
}

// OwnerActionsOf audits events: the OwnerExtended, OwnerKept and OwnerResumed Events Kustos
// wrote, counted per action, and the last of them (at most last).
func OwnerActionsOf(events []corev1.Event, last int) OwnerActions {
	a := OwnerActions{Counts: map[string]int{}}
	var all []OwnerAction
	for i := range events {
		ev := &events[i]
		action, ok := ownerActionOf[ev.Reason]
		if !ok || (ev.ReportingController != kustosComponent && ev.Source.Component != kustosComponent) {
			continue
		}
		a.Counts[action]++
		all = append(all, OwnerAction{Action: action, Target: eventTarget(ev.InvolvedObject), At: eventTime(ev)})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].At.After(all[j].At) })
	if len(all) > last {
		all = all[:last]
	}
	a.Last = all
	return a
}

func eventTarget(ref corev1.ObjectReference) string {
	kind := ref.Kind
	if group, _, ok := strings.Cut(ref.APIVersion, "/"); ok && group != "" {
		kind += "." + group
	}
	if ref.Namespace == "" {
		return kind + "/" + ref.Name
	}
	return kind + "/" + ref.Namespace + "/" + ref.Name
}

// eventTime is when the Event last happened (Kustos writes each action's Event once).
func eventTime(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.UTC()
	case !ev.EventTime.IsZero():
		return ev.EventTime.UTC()
	case !ev.FirstTimestamp.IsZero():
		return ev.FirstTimestamp.UTC()
	}
	return ev.CreationTimestamp.UTC()
}

// GatherOwnerActions reads the owner-action Events of every namespace (one list per reason,
// selected by the API server) and audits them. Events live as long as the API server keeps them
// (--event-ttl, an hour by default): the audit is of recent actions, not a history.
func GatherOwnerActions(ctx context.Context, c client.Reader, last int) (OwnerActions, error) {
	var events []corev1.Event
	reasons := make([]string, 0, len(ownerActionOf))
	for r := range ownerActionOf {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		var list corev1.EventList
		if err := c.List(ctx, &list, client.MatchingFields{"reason": r}); err != nil {
			return OwnerActions{}, fmt.Errorf("listing %s Events: %w", r, err)
		}
		events = append(events, list.Items...)
	}
	return OwnerActionsOf(events, last), nil
}

// PrintOwnerActions writes the audit after the rows: in the table, a section with the counts
// and one line per last action; as JSON, one line {"ownerActions":{…}}. Nothing without
// actions.
func PrintOwnerActions(w io.Writer, a OwnerActions, format string) error {
	if len(a.Counts) == 0 {
		return nil
	}
	if format == "json" {
		return json.NewEncoder(w).Encode(map[string]OwnerActions{"ownerActions": a})
	}
	actions := make([]string, 0, len(a.Counts))
	for action := range a.Counts {
		actions = append(actions, action)
	}
	sort.Strings(actions)
	counts := make([]string, len(actions))
	for i, action := range actions {
		counts[i] = fmt.Sprintf("%s %d", action, a.Counts[action])
	}
	if _, err := fmt.Fprintf(w, "\nOWNER ACTIONS (from the Events Kustos wrote that the API server still keeps: %s)\n", strings.Join(counts, ", ")); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTION\tTARGET\tAT")
	for _, l := range a.Last {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Action, l.Target, l.At.Format(time.RFC3339))
	}
	return tw.Flush()
}
