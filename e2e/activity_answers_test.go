package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/activity/promtest"
)

// TestActivityAnswersThatAreNoTimes asks a real Prometheus data queries whose answers are or
// are not what instant mode wants (each target's last activity as a Unix time, within what the
// query covers). A value naming a target that is no such time — a count from a query written
// without timestamp(), a time ahead, NaN — makes the source an error, so that nothing looks
// idle for want of a readable time; a series naming no target is only counted.
func TestActivityAnswersThatAreNoTimes(t *testing.T) {
	prom := promtest.Start(t, promtest.Options{})
	// series is a one-sample vector with the target labels (empty values: no label).
	series := func(ns, name, value string) string {
		return fmt.Sprintf(`label_replace(label_replace(vector(%s), "namespace", %q, "", ""), "service", %q, "", "")`, value, ns, name)
	}
	for _, tc := range []struct {
		name    string
		data    string
		status  activity.Status
		targets int
		invalid int
		detail  string
	}{
		{"times", series("lab", "vm-1", "time() - 7200") + " or " + series("lab", "vm-2", "time() - 60"), activity.StatusOK, 2, 0, ""},
		{"a series naming no target: counted, skipped", series("", "vm-1", "time()") + " or " + series("lab", "vm-2", "time()"), activity.StatusOK, 1, 1, ""},
		{"a count, not a time", series("lab", "vm-1", "time()") + " or " + series("lab", "vm-2", "3"), activity.StatusError, 0, 0, "(e.g. lab/vm-2: 3)"},
		{"a time ahead", series("lab", "vm-1", "time() + 3600"), activity.StatusError, 0, 0, "no Unix time between"},
		{"a time before the window", series("lab", "vm-1", "time() - 30 * 86400"), activity.StatusError, 0, 0, "lab/vm-1"},
		{"NaN", series("lab", "vm-1", "0/0"), activity.StatusError, 0, 0, "lab/vm-1: NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := activity.Compile([]activity.Source{{Name: "nginx", Available: "vector(1)", Data: tc.data,
				Labels: activity.ResultLabels{Namespace: "namespace", Name: "service"}}})
			if err != nil {
				t.Fatal(err)
			}
			c := &activity.Checker{API: prom.API(), Sources: src, Timeout: 10 * time.Second}
			r := c.Check(context.Background(), time.Now(), 14*24*time.Hour).Sources[0]
			if r.Status != tc.status || len(r.Last) != tc.targets || r.Invalid != tc.invalid {
				t.Errorf("status %s, %d targets, %d invalid (%s); want %s, %d, %d", r.Status, len(r.Last), r.Invalid, r.Detail, tc.status, tc.targets, tc.invalid)
			}
			if !strings.Contains(r.Detail, tc.detail) {
				t.Errorf("detail %q, want it to say %q", r.Detail, tc.detail)
			}
		})
	}
}
