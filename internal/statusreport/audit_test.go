package statusreport

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ownerEvent(reason, component, kind, apiVersion, ns, name string, at time.Time) corev1.Event {
	return corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: ns, Name: name + "." + reason},
		InvolvedObject:      corev1.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: ns, Name: name},
		Reason:              reason,
		Source:              corev1.EventSource{Component: component},
		ReportingController: component,
		LastTimestamp:       metav1.NewTime(at),
	}
}

// TestOwnerActions: the audit counts the owner actions per action from the Events Kustos wrote
// (another component's Event of the same reason is not Kustos's audit) and lists the last few,
// newest first; the table section and the JSON line, and nothing at all without actions.
func TestOwnerActions(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	events := []corev1.Event{
		ownerEvent("OwnerKept", "kustos", "Deployment", "apps/v1", "lab", "vm-1", t0),
		ownerEvent("OwnerResumed", "kustos", "Deployment", "apps/v1", "lab", "vm-2", t0.Add(2*time.Minute)),
		ownerEvent("OwnerExtended", "kustos", "Namespace", "v1", "", "preview-1", t0.Add(time.Minute)),
		ownerEvent("OwnerKept", "kustos", "VirtualMachine", "kubevirt.io/v1", "lab", "vm-3", t0.Add(3*time.Minute)),
		ownerEvent("OwnerKept", "someone-else", "Deployment", "apps/v1", "lab", "forged", t0.Add(time.Hour)),
		ownerEvent("InactivityAlert", "kustos", "Deployment", "apps/v1", "lab", "vm-1", t0.Add(time.Hour)),
	}
	for _, tc := range []struct {
		name, format string
		events       []corev1.Event
		last         int
		want         string
	}{
		{"table", "table", events, 3, "\nOWNER ACTIONS (from the Events Kustos wrote that the API server still keeps: extend 1, keep 2, resume 1)\n" +
			"ACTION  TARGET                               AT\n" +
			"keep    VirtualMachine.kubevirt.io/lab/vm-3  2026-11-24T12:03:00Z\n" +
			"resume  Deployment.apps/lab/vm-2             2026-11-24T12:02:00Z\n" +
			"extend  Namespace/preview-1                  2026-11-24T12:01:00Z\n"},
		{"json", "json", events, 2, `{"ownerActions":{"counts":{"extend":1,"keep":2,"resume":1},"last":[` +
			`{"action":"keep","target":"VirtualMachine.kubevirt.io/lab/vm-3","at":"2026-11-24T12:03:00Z"},` +
			`{"action":"resume","target":"Deployment.apps/lab/vm-2","at":"2026-11-24T12:02:00Z"}]}}` + "\n"},
		{"none", "table", events[4:], 3, ""},
		{"none as json", "json", nil, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := PrintOwnerActions(&buf, OwnerActionsOf(tc.events, tc.last), tc.format); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", buf.String(), tc.want)
			}
		})
	}
}
