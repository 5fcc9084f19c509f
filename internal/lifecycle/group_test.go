package lifecycle

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestGroupKey(t *testing.T) {
	for _, tc := range []struct {
		key                 Key
		detector, by, value string
		ok                  bool
	}{
		{GroupKey("expiry", "namespace", "team-a"), "expiry", "namespace", "team-a", true},
		{GroupKey("ephemeral", "cleaner", "team-a/previews"), "ephemeral", "cleaner", "team-a/previews", true},
		{NewKey("quota", "team-a", "compute"), "", "", "", false},
		{KeyFor("expiry", Target{Kind: "Deployment", Group: "apps", Namespace: "a", Name: "b"}), "", "", "", false},
		{"expiry/@/x", "", "", "", false},
		{"/@namespace/x", "", "", "", false},
	} {
		d, by, v, ok := tc.key.GroupParts()
		if ok != tc.ok || ok && (d != tc.detector || by != tc.by || v != tc.value) || tc.key.IsGroup() != tc.ok {
			t.Errorf("%q: %q %q %q %v, want %q %q %q %v", tc.key, d, by, v, ok, tc.detector, tc.by, tc.value, tc.ok)
		}
	}
}

func TestParseGroupBy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]GroupBy
		err  string
	}{
		{"", map[string]GroupBy{"quota": GroupByNone, "expiry": GroupByNamespace, "inactivity": GroupByNamespace}, ""},
		{"owner", map[string]GroupBy{"quota": GroupByNone, "expiry": GroupByOwner, "inactivity": GroupByOwner}, ""},
		{"none", map[string]GroupBy{"quota": GroupByNone, "expiry": GroupByNone, "inactivity": GroupByNone}, ""},
		{"quota=namespace, expiry=owner", map[string]GroupBy{"quota": GroupByNamespace, "expiry": GroupByOwner, "inactivity": GroupByNamespace}, ""},
		{"namespaces", nil, `"namespaces": want namespace, owner or none`},
		{"ephemeral=none", nil, `"ephemeral": not a detector that groups`},
		{"expiry=owner,quota", nil, `"quota": want detector=namespace|owner|none`},
		{"expiry=team", nil, `expiry: "team": want namespace, owner or none`},
	} {
		got, err := ParseGroupBy(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Fatalf("%q: %v, %v", tc.in, got, err)
		}
		for d, b := range tc.want {
			if got[d] != b {
				t.Errorf("%q: %s groups by %q, want %q", tc.in, d, got[d], b)
			}
		}
	}
}

func TestGroupByFor(t *testing.T) {
	dep := Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web"}
	ns := Target{Version: "v1", Kind: "Namespace", Name: "team-a"}
	if g := GroupByNamespace.For("expiry", dep, "ana@example.com", time.Minute); g.Key != "expiry/@namespace/team-a" || g.Namespace != "team-a" || g.Window != time.Minute {
		t.Errorf("by namespace: %+v", g)
	}
	if g := GroupByOwner.For("expiry", dep, "ana@example.com", time.Minute); g.Key != "expiry/@owner/ana@example.com" || g.Namespace != "" || g.Label != "owner ana@example.com" {
		t.Errorf("by owner: %+v", g)
	}
	if g := GroupByOwner.For("expiry", dep, "", time.Minute); g.Key != "expiry/@namespace/team-a" {
		t.Errorf("by owner without one falls back to the namespace: %+v", g)
	}
	if !GroupByNamespace.For("expiry", ns, "", 0).IsZero() || !GroupByNone.For("expiry", dep, "x", 0).IsZero() {
		t.Errorf("a cluster-scoped target, or none: not grouped")
	}
}

func TestUrgencyOrder(t *testing.T) {
	if !(UrgencyOf(Change{Blocking: true, Edit: Edit{Op: EditSetFields}}) < UrgencyOf(Change{Edit: Edit{Op: EditDelete}}) &&
		UrgencyOf(Change{Edit: Edit{Op: EditDelete}}) < UrgencyOf(Change{Edit: Edit{Op: EditScaleToZero}}) &&
		UrgencyOf(Change{Edit: Edit{Op: EditScaleToZero}}) < UrgencyOf(Change{Edit: Edit{Op: EditSetFields}})) {
		t.Error("want blocking quota < removal < pause < the rest")
	}
	q := &QueuedError{Reason: QueuedBudget, Message: "full", Until: time.Unix(10, 0)}
	if at, ok := RetryAt(q); !errors.Is(q, ErrQueued) || !ok || !at.Equal(time.Unix(10, 0)) {
		t.Errorf("a QueuedError is ErrQueued and says when to retry: %v %v", at, ok)
	}
}

func FuzzParseGroupBy(f *testing.F) {
	for _, s := range []string{"", "owner", "quota=namespace,expiry=owner", "=", "a=b=c", ",,,", "expiry=owner,expiry=none"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseGroupBy(s)
		if err != nil {
			if got != nil {
				t.Fatalf("%q: an error and a result", s)
			}
			return
		}
		for d, b := range got {
			if _, known := DefaultGrouping[d]; !known || (b != GroupByNone && b != GroupByNamespace && b != GroupByOwner) {
				t.Fatalf("%q: %s=%q", s, d, b)
			}
		}
	})
}
