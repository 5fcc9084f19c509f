package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A failed act is reported by name and step (not as "PR mode:" whichever act it was), with the
// last logLines lines of its Kustos log; a nested act (the Cleaner act inside the PR act) is the
// one reported when it fails; a githubtest Fatalf fails the act it happened in; a passed deadline
// is said to be the act's.
func TestActsReport(t *testing.T) {
	var kustosLog lockedBuffer
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&kustosLog, `{"msg":"line %d"}`+"\n", i)
	}
	for _, tc := range []struct {
		name     string
		run      func(r *acts) error
		want     []string
		dontWant []string
	}{
		{"the failed act and step, the log's tail", func(r *acts) error {
			return r.run(context.Background(), actInactivity, func(_ context.Context, a *act) error {
				a.step("starting kustos")
				a.useLogs("kustos (inactivity)", &kustosLog)
				a.step("waiting for the alerts")
				return errors.New("no alerts")
			})
		}, []string{`the inactivity act, at the step "waiting for the alerts": no alerts`, "kustos (inactivity): the last 40 lines of its log:", `"line 61"`, `"line 100"`},
			[]string{"PR mode", `"line 60"`, "deadline"}},
		{"the nested act that failed, not the one around it", func(r *acts) error {
			return r.run(context.Background(), actPR, func(_ context.Context, a *act) error {
				a.step("waiting for Kustos's pull request")
				return r.run(context.Background(), actCleaner, func(_ context.Context, cl *act) error {
					cl.step("waiting for the deletion")
					return errors.New("the Service was not deleted")
				})
			})
		}, []string{`the cleaner act, at the step "waiting for the deletion": the Service was not deleted`}, []string{"the pr act"}},
		{"a githubtest Fatalf", func(r *acts) error {
			return r.run(context.Background(), actExpiry, func(_ context.Context, a *act) error {
				a.step("waiting for Kustos's pull requests")
				(&demoTB{}).Fatalf("githubtest: no pull request #%d", 7)
				return nil
			})
		}, []string{`the expiry act, at the step "waiting for Kustos's pull requests": githubtest: no pull request #7`}, nil},
		{"the act's deadline", func(r *acts) error {
			return r.run(context.Background(), actObserver, func(ctx context.Context, a *act) error {
				a.step("waiting for Kustos's recommendations")
				return poll(ctx, func() (bool, error) { return false, nil })
			})
		}, []string{`the observer act, at the step "waiting for Kustos's recommendations": context deadline exceeded`, "(the act's deadline, 100ms, passed"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			timeout := time.Duration(0)
			if strings.Contains(tc.name, "deadline") {
				timeout = 100 * time.Millisecond
			}
			var out, report bytes.Buffer
			r := newActs(&out, timeout)
			err := tc.run(r)
			if err == nil {
				t.Fatal("no error")
			}
			r.report(&report, nil, err)
			for _, w := range tc.want {
				if !strings.Contains(report.String(), w) {
					t.Errorf("the report lacks %q:\n%s", w, report.String())
				}
			}
			for _, w := range tc.dontWant {
				if strings.Contains(report.String(), w) {
					t.Errorf("the report says %q:\n%s", w, report.String())
				}
			}
		})
	}
}

// Every act has a deadline of its own.
func TestActDeadlines(t *testing.T) {
	for _, a := range append([]string{actSetup}, allActs...) {
		if actDeadlines[a] < time.Minute {
			t.Errorf("act %s: deadline %s", a, actDeadlines[a])
		}
	}
}
