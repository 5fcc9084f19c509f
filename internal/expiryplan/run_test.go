package expiryplan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/state"
)

const now = "2026-05-10T12:00:00Z"

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// golden is the plan of testdata/objects.yaml with the state of testdata/leases.yaml at now,
// with the default flags:
//   - tools has no namespace (default) and an absolute deadline; api a deadline, its own owner
//     and pause; solo's Namespace is not in the input, so only its own metadata counts.
//   - broken (a ttl that does not parse) and odd (an on-expiry that does not) are left alone:
//     orphans, with a warning each; odd has no action.
//   - done was warned, expired and decided on (the Lease's last-modified): nothing is next.
//   - web's Lease records the warning sent at 06:00: the removal comes 24h later, although the
//     deadline (10:00) has passed.
//   - team-b opted out (label): its Deployment and itself have nothing next and nothing else.
//   - stray (team-c) and app (team-d) lack a lifetime (and stray an owner): orphans.
//   - Namespace team-a was extended to 2026-06-10 through a link (its Lease).
//   - batch has no Lease and its warning is due: Decide's first step records it, "warn" at now.
//   - leaving is being deleted, and the ConfigMap is not a lifecycle kind: no lines.
var golden = []string{
	`{"key":"expiry/Deployment.apps/default/tools","target":"Deployment.apps/default/tools","owner":"ops@example.com","deadline":"2026-07-01T00:00:00Z","next":"warn","at":"2026-06-28T00:00:00Z","action":"delete"}`,
	`{"key":"expiry/Deployment.apps/team-a/api","target":"Deployment.apps/team-a/api","owner":"bob@example.com","deadline":"2026-06-01T00:00:00Z","next":"warn","at":"2026-05-29T00:00:00Z","action":"pause"}`,
	`{"key":"expiry/Deployment.apps/team-a/broken","target":"Deployment.apps/team-a/broken","owner":"ana@example.com","deadline":null,"next":"orphan","at":null,"action":"delete"}`,
	`{"key":"expiry/Deployment.apps/team-a/done","target":"Deployment.apps/team-a/done","owner":"ana@example.com","deadline":"2026-05-01T00:00:00Z","next":"none","at":null,"action":"delete"}`,
	`{"key":"expiry/Deployment.apps/team-a/odd","target":"Deployment.apps/team-a/odd","owner":"ana@example.com","deadline":null,"next":"orphan","at":null,"action":null}`,
	`{"key":"expiry/Deployment.apps/team-a/web","target":"Deployment.apps/team-a/web","owner":"ana@example.com","deadline":"2026-05-10T10:00:00Z","next":"act","at":"2026-05-11T06:00:00Z","action":"delete"}`,
	`{"key":"expiry/Deployment.apps/team-b/legacy","target":"Deployment.apps/team-b/legacy","owner":null,"deadline":null,"next":"none","at":null,"action":null}`,
	`{"key":"expiry/Deployment.apps/team-c/stray","target":"Deployment.apps/team-c/stray","owner":null,"deadline":null,"next":"orphan","at":null,"action":"delete"}`,
	`{"key":"expiry/Deployment.apps/team-d/app","target":"Deployment.apps/team-d/app","owner":"dan","deadline":null,"next":"orphan","at":null,"action":"delete"}`,
	`{"key":"expiry/Deployment.apps/team-x/solo","target":"Deployment.apps/team-x/solo","owner":"carol@example.com","deadline":"2026-05-15T00:00:00Z","next":"warn","at":"2026-05-12T00:00:00Z","action":"delete"}`,
	`{"key":"expiry/Namespace//team-a","target":"Namespace/team-a","owner":"ana@example.com","deadline":"2026-06-10T00:00:00Z","next":"warn","at":"2026-06-07T00:00:00Z","action":"delete"}`,
	`{"key":"expiry/Namespace//team-b","target":"Namespace/team-b","owner":null,"deadline":null,"next":"none","at":null,"action":null}`,
	`{"key":"expiry/Namespace//team-c","target":"Namespace/team-c","owner":null,"deadline":null,"next":"orphan","at":null,"action":"delete"}`,
	`{"key":"expiry/Namespace//team-d","target":"Namespace/team-d","owner":"dan","deadline":null,"next":"orphan","at":null,"action":"delete"}`,
	`{"key":"expiry/StatefulSet.apps/team-a/batch","target":"StatefulSet.apps/team-a/batch","owner":"ana@example.com","deadline":"2026-05-11T00:00:00Z","next":"warn","at":"2026-05-10T12:00:00Z","action":"delete"}`,
}

// goldenWarnings are the warnings of every run over testdata/objects.yaml: FILE:LINE of the
// object, the key, the value and why.
var goldenWarnings = []string{
	`kustos expiry plan: warning: testdata/objects.yaml:64: kustos.io/ttl="5 days" on Deployment.apps/team-a/broken: not a lifetime (e.g. 90m, 1d, 1w2d, or never): invalid duration: "5 days": "5" needs a unit (ns, us, ms, s, m, h, d or w); the object is left alone`,
	`kustos expiry plan: warning: testdata/objects.yaml:70: kustos.io/on-expiry="archive" on Deployment.apps/team-a/odd: want "delete" or "pause"; the object is left alone`,
}

// expect is golden with the lines of some keys replaced ("" removes a line) and others added
// (in key order).
func expect(t *testing.T, changes map[string]string) []string {
	t.Helper()
	lines := map[string]string{}
	keyOf := func(l string) string {
		var v struct{ Key string }
		if err := json.Unmarshal([]byte(l), &v); err != nil || v.Key == "" {
			t.Fatalf("bad golden line %s: %v", l, err)
		}
		return v.Key
	}
	for _, l := range golden {
		lines[keyOf(l)] = l
	}
	for k, l := range changes {
		if l == "" {
			delete(lines, k)
			continue
		}
		if keyOf(l) != k {
			t.Fatalf("change for %s has key %s", k, keyOf(l))
		}
		lines[k] = l
	}
	var out []string
	for _, l := range lines {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return keyOf(out[i]) < keyOf(out[j]) })
	return out
}

func TestPlan(t *testing.T) {
	objects, leases := []string{"-f", "testdata/objects.yaml"}, []string{"--filename", "testdata/leases.yaml"}
	owners := filepath.Join(t.TempDir(), "owners.yaml")
	if err := os.WriteFile(owners, []byte("dan: dan@example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	with := func(args ...string) []string {
		return append(append(append([]string{}, objects...), leases...), append([]string{"--now", now}, args...)...)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		changes map[string]string
	}{
		{name: "state from the Leases", args: with()},
		{name: "without Leases every due warning is recorded first", args: append(append([]string{}, objects...), "--now", now),
			changes: map[string]string{
				"expiry/Deployment.apps/team-a/web":  `{"key":"expiry/Deployment.apps/team-a/web","target":"Deployment.apps/team-a/web","owner":"ana@example.com","deadline":"2026-05-10T10:00:00Z","next":"warn","at":"2026-05-10T12:00:00Z","action":"delete"}`,
				"expiry/Deployment.apps/team-a/done": `{"key":"expiry/Deployment.apps/team-a/done","target":"Deployment.apps/team-a/done","owner":"ana@example.com","deadline":"2026-05-01T00:00:00Z","next":"warn","at":"2026-05-10T12:00:00Z","action":"delete"}`,
				"expiry/Namespace//team-a":           `{"key":"expiry/Namespace//team-a","target":"Namespace/team-a","owner":"ana@example.com","deadline":"2026-05-20T00:00:00Z","next":"warn","at":"2026-05-17T00:00:00Z","action":"delete"}`,
			}},
		{name: "later, the removal is due", args: append(append(append([]string{}, objects...), leases...), "--now", "2026-05-11T06:00:00Z"),
			changes: map[string]string{
				"expiry/Deployment.apps/team-a/web":    `{"key":"expiry/Deployment.apps/team-a/web","target":"Deployment.apps/team-a/web","owner":"ana@example.com","deadline":"2026-05-10T10:00:00Z","next":"act","at":"2026-05-11T06:00:00Z","action":"delete"}`,
				"expiry/StatefulSet.apps/team-a/batch": `{"key":"expiry/StatefulSet.apps/team-a/batch","target":"StatefulSet.apps/team-a/batch","owner":"ana@example.com","deadline":"2026-05-11T00:00:00Z","next":"warn","at":"2026-05-11T06:00:00Z","action":"delete"}`,
			}},
		{name: "notification interval", args: with("--notification-interval", "2d"),
			changes: map[string]string{
				"expiry/Deployment.apps/team-a/web": `{"key":"expiry/Deployment.apps/team-a/web","target":"Deployment.apps/team-a/web","owner":"ana@example.com","deadline":"2026-05-10T10:00:00Z","next":"act","at":"2026-05-12T06:00:00Z","action":"delete"}`,
			}},
		{name: "warning before", args: with("--expiry-warning-before=1w"),
			changes: map[string]string{
				"expiry/Deployment.apps/default/tools": `{"key":"expiry/Deployment.apps/default/tools","target":"Deployment.apps/default/tools","owner":"ops@example.com","deadline":"2026-07-01T00:00:00Z","next":"warn","at":"2026-06-24T00:00:00Z","action":"delete"}`,
				"expiry/Deployment.apps/team-a/api":    `{"key":"expiry/Deployment.apps/team-a/api","target":"Deployment.apps/team-a/api","owner":"bob@example.com","deadline":"2026-06-01T00:00:00Z","next":"warn","at":"2026-05-25T00:00:00Z","action":"pause"}`,
				"expiry/Deployment.apps/team-x/solo":   `{"key":"expiry/Deployment.apps/team-x/solo","target":"Deployment.apps/team-x/solo","owner":"carol@example.com","deadline":"2026-05-15T00:00:00Z","next":"warn","at":"2026-05-10T12:00:00Z","action":"delete"}`,
				"expiry/Namespace//team-a":             `{"key":"expiry/Namespace//team-a","target":"Namespace/team-a","owner":"ana@example.com","deadline":"2026-06-10T00:00:00Z","next":"warn","at":"2026-06-03T00:00:00Z","action":"delete"}`,
			}},
		{name: "default TTL", args: with("--default-ttl", "10d"),
			changes: map[string]string{
				// Without an owner still an orphan, but now with a deadline.
				"expiry/Deployment.apps/team-c/stray": `{"key":"expiry/Deployment.apps/team-c/stray","target":"Deployment.apps/team-c/stray","owner":null,"deadline":"2026-02-11T00:00:00Z","next":"orphan","at":null,"action":"delete"}`,
				"expiry/Namespace//team-c":            `{"key":"expiry/Namespace//team-c","target":"Namespace/team-c","owner":null,"deadline":"2026-01-11T00:00:00Z","next":"orphan","at":null,"action":"delete"}`,
				"expiry/Deployment.apps/team-d/app":   `{"key":"expiry/Deployment.apps/team-d/app","target":"Deployment.apps/team-d/app","owner":"dan","deadline":"2026-05-15T00:00:00Z","next":"warn","at":"2026-05-12T00:00:00Z","action":"delete"}`,
				"expiry/Namespace//team-d":            `{"key":"expiry/Namespace//team-d","target":"Namespace/team-d","owner":"dan","deadline":"2026-05-11T00:00:00Z","next":"warn","at":"2026-05-10T12:00:00Z","action":"delete"}`,
			}},
		{name: "Deployments only", args: with("--lifecycle-kinds", "apps/v1/Deployment"),
			changes: map[string]string{"expiry/StatefulSet.apps/team-a/batch": ""}},
		{name: "ConfigMaps too", args: with("--lifecycle-kinds", "apps/v1/Deployment,v1/ConfigMap"),
			changes: map[string]string{
				"expiry/StatefulSet.apps/team-a/batch": "",
				"expiry/ConfigMap/team-a/settings":     `{"key":"expiry/ConfigMap/team-a/settings","target":"ConfigMap/team-a/settings","owner":"ana@example.com","deadline":"2026-05-02T00:00:00Z","next":"warn","at":"2026-05-10T12:00:00Z","action":"delete"}`,
			}},
		// Acting changes what the controller does (the extension is written back, the owner
		// told the removal was done), not what happens next.
		{name: "direct mode", args: with("--mode", "direct")},
		{name: "owners file", args: with("--expiry-owners", owners)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, "", tc.args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			want := expect(t, tc.changes)
			got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if gotErr := strings.TrimSuffix(errs, "\n"); gotErr != strings.Join(goldenWarnings, "\n") {
				t.Fatalf("stderr:\n%s\nwant:\n%s", gotErr, strings.Join(goldenWarnings, "\n"))
			}
			for _, l := range got {
				var line Line
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Errorf("not a Line: %s: %v", l, err)
				}
			}
		})
	}
}

const (
	deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n  namespace: n\n  creationTimestamp: \"2026-05-01T00:00:00Z\"\n"
	stateLease = "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: s\n  namespace: kustos-system\n" +
		"  labels: {app.kubernetes.io/managed-by: kustos}\n  annotations:\n"
)

// TestWarnings: what the controller reports and goes on from is a warning, and the exit status
// stays 0.
func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		name, objects, leases string
		want                  []string
		warnings              []string
	}{
		{
			name: "an unusable opt-out on the Namespace, once for the Namespace and its objects",
			objects: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n" +
				"  labels: {kustos.io/expiration-ignore: \"yes\"}\n  annotations: {kustos.io/owner: \"Ana <ana@example.com>\", kustos.io/ttl: 20d}\n---\n" + deployment,
			want: []string{
				`{"key":"expiry/Deployment.apps/n/x","target":"Deployment.apps/n/x","owner":"Ana <ana@example.com>","deadline":"2026-05-21T00:00:00Z","next":"warn","at":"2026-05-18T00:00:00Z","action":"delete"}`,
				`{"key":"expiry/Namespace//n","target":"Namespace/n","owner":"Ana <ana@example.com>","deadline":"2026-01-21T00:00:00Z","next":"warn","at":"2026-05-10T12:00:00Z","action":"delete"}`,
			},
			warnings: []string{`a.yaml:1: label kustos.io/expiration-ignore="yes" on Namespace/n: want "true" or "false"; not opted out`},
		},
		{
			name:    "an unreadable state entry is dropped",
			objects: deployment + "  annotations: {kustos.io/owner: ana@example.com, kustos.io/expires-at: \"2026-05-11T00:00:00Z\"}\n",
			leases: stateLease + "    " + state.AnnotationKey + ": expiry/Deployment.apps/n/x\n" +
				"    " + state.BagPrefix + "warning-for: \"2026-05-11T00:00:00Z\"\n" +
				"    " + state.BagPrefix + "warning-attempt-at: \"2026-05-09T00:00:00Z\"\n" +
				"    " + state.BagPrefix + "warning-attempts: many\n" +
				"    " + state.BagPrefix + "warned-at: \"2026-05-09T00:00:00Z\"\n",
			want: []string{
				`{"key":"expiry/Deployment.apps/n/x","target":"Deployment.apps/n/x","owner":"ana@example.com","deadline":"2026-05-11T00:00:00Z","next":"act","at":"2026-05-11T00:00:00Z","action":"delete"}`,
			},
			warnings: []string{`b.yaml:1: state lease kustos-system/s of expiry/Deployment.apps/n/x: unreadable expiry state warning-attempts="many" dropped, as the controller drops it`},
		},
		{
			name:    "another detector's Lease is not read",
			objects: deployment + "  annotations: {kustos.io/owner: ana@example.com, kustos.io/expires-at: \"2026-05-11T00:00:00Z\"}\n",
			leases:  stateLease + "    " + state.AnnotationKey + ": quota/n/x\n    " + state.AnnotationLastModified + ": yesterday\n",
			want: []string{
				`{"key":"expiry/Deployment.apps/n/x","target":"Deployment.apps/n/x","owner":"ana@example.com","deadline":"2026-05-11T00:00:00Z","next":"warn","at":"2026-05-10T12:00:00Z","action":"delete"}`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--now", now}
			for name, content := range map[string]string{"a.yaml": tc.objects, "b.yaml": tc.leases} {
				if content != "" {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
						t.Fatal(err)
					}
					args = append(args, "-f", name)
				}
			}
			t.Chdir(dir) // so that messages name a.yaml and b.yaml
			code, out, errs := run(t, "", args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if got := strings.TrimSuffix(out, "\n"); got != strings.Join(tc.want, "\n") {
				t.Fatalf("output:\n%s\nwant:\n%s", got, strings.Join(tc.want, "\n"))
			}
			var want []string
			for _, w := range tc.warnings {
				want = append(want, "kustos expiry plan: warning: "+w)
			}
			if got := strings.TrimSuffix(errs, "\n"); got != strings.Join(want, "\n") {
				t.Fatalf("stderr:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	owned := deployment + "  annotations: {kustos.io/owner: ana@example.com, kustos.io/ttl: 1d}\n"
	for _, tc := range []struct {
		name, file string
		args       []string
		want       string
	}{
		{name: "YAML syntax", file: write("a.yaml", "a: [\n"), want: "a.yaml:"},
		{name: "not a string", file: write("b.yaml", "# a comment\n"+deployment+"  annotations: {kustos.io/ttl: [1d]}\n"),
			want: "b.yaml:2: Deployment n/x:"},
		{name: "Lease with a time that does not parse",
			file: write("c.yaml", owned+"---\n"+stateLease+"    "+state.AnnotationKey+": expiry/Deployment.apps/n/x\n    "+state.AnnotationLastModified+": yesterday\n"),
			want: "c.yaml:9: state lease kustos-system/s: annotation " + state.AnnotationLastModified + `="yesterday" is not an RFC 3339 time`},
		{name: "Lease of a target not in the input, still expiry state",
			file: write("d.yaml", stateLease+"    "+state.AnnotationKey+": expiry/Deployment.apps/n/gone\n    "+state.AnnotationLastModified+": \"2026-13-01T00:00:00Z\"\n"),
			want: "d.yaml:1: state lease kustos-system/s: annotation " + state.AnnotationLastModified},
		{name: "no creation time", file: write("e.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, namespace: n}\n"),
			want: "e.yaml:1: Deployment.apps/n/x: metadata.creationTimestamp is missing"},
		{name: "no name", file: write("f.yaml", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {namespace: n}\n"),
			want: "f.yaml:1: StatefulSet.apps: metadata.name is missing"},
		{name: "an object twice", file: write("g.yaml", owned+"---\n"+owned), want: "g.yaml:9: Deployment.apps/n/x is also at " + filepath.Join(dir, "g.yaml") + ":1; give each object once"},
		{name: "a Lease twice", file: write("h.yaml", stateLease+"    "+state.AnnotationKey+": expiry/Namespace//n\n---\n"+stateLease+"    "+state.AnnotationKey+": expiry/Namespace//n\n"),
			want: "h.yaml:10: state lease kustos-system/s holds the state of expiry/Namespace//n, as does kustos-system/s at " + filepath.Join(dir, "h.yaml") + ":1; give each Lease once"},
		{name: "missing file", file: filepath.Join(dir, "nope.yaml"), want: "nope.yaml: cannot read: no such file or directory"},
		{name: "bad --now", file: write("i.yaml", owned), args: []string{"--now", "tomorrow"}, want: `invalid --now "tomorrow"`},
		{name: "--now without a zone", file: write("i.yaml", owned), args: []string{"--now", "2026-05-10T12:00:00"}, want: "invalid --now"},
		{name: "bad --mode", file: write("i.yaml", owned), args: []string{"--mode", "auto"}, want: `invalid --mode="auto": want observe, pr, direct`},
		{name: "bad --lifecycle-kinds", file: write("i.yaml", owned), args: []string{"--lifecycle-kinds", "apps/v1/deployments"}, want: `invalid --lifecycle-kinds="apps/v1/deployments"`},
		{name: "bad --default-ttl", file: write("i.yaml", owned), args: []string{"--default-ttl", "5 days"}, want: `invalid --default-ttl="5 days": invalid duration`},
		{name: "negative --expiry-warning-before", file: write("i.yaml", owned), args: []string{"--expiry-warning-before", "-1h"}, want: `invalid --expiry-warning-before="-1h": invalid duration`},
		{name: "unknown flag", file: write("i.yaml", owned), args: []string{"--dry-run"}, want: "kustos expiry plan: unknown flag --dry-run\nRun 'kustos expiry plan --help' for usage."},
		{name: "an argument", file: write("i.yaml", owned), args: []string{"objects.yaml"}, want: `unexpected argument "objects.yaml" (give input files with -f)`},
		{name: "owners file missing", file: write("i.yaml", owned), args: []string{"--expiry-owners", filepath.Join(dir, "none.yaml")}, want: "--expiry-owners: " + filepath.Join(dir, "none.yaml") + ": cannot read"},
		{name: "owners file invalid", file: write("i.yaml", owned), args: []string{"--expiry-owners", write("o.yaml", "ana: not-an-address\n")},
			want: "--expiry-owners=" + filepath.Join(dir, "o.yaml") + `: owner "ana": "not-an-address" is not an email address`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, "", append([]string{"-f", tc.file}, tc.args...)...)
			if code != ExitUsage || out != "" {
				t.Fatalf("exit %d, stdout %q; want 2 and nothing", code, out)
			}
			if !strings.Contains(errs, tc.want) {
				t.Fatalf("stderr %q; want it to contain %q", errs, tc.want)
			}
		})
	}
}

// TestStdinAndClock: without -f the input is stdin, and without --now the clock decides (a
// deadline far ahead gives the same plan whenever the test runs).
func TestStdinAndClock(t *testing.T) {
	code, out, errs := run(t, deployment+"  annotations: {kustos.io/owner: ana@example.com, kustos.io/expires-at: \"2999-01-01T00:00:00Z\"}\n")
	if code != ExitOK || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := `{"key":"expiry/Deployment.apps/n/x","target":"Deployment.apps/n/x","owner":"ana@example.com","deadline":"2999-01-01T00:00:00Z","next":"warn","at":"2998-12-29T00:00:00Z","action":"delete"}` + "\n"
	if out != want {
		t.Fatalf("output %s; want %s", out, want)
	}
	if code, out, errs := run(t, "", "-f", "-", "--now", now); code != ExitOK || out != "" || errs != "" {
		t.Fatalf("empty input: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestHelp(t *testing.T) {
	code, out, errs := run(t, "", "-h")
	if code != ExitOK || errs != "" || !strings.HasPrefix(out, "Usage: kustos expiry plan -f FILE") || !strings.Contains(out, longText) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and the help on stdout", code, out, errs)
	}
}

// TestUsage keeps the help true to the names and defaults it documents.
func TestUsage(t *testing.T) {
	_, help, _ := run(t, "", "--help")
	for _, s := range []string{
		state.AnnotationKey, state.BagPrefix, state.AnnotationLastModified, state.LabelManagedBy + "=" + state.ManagedByValue,
		expiry.AnnotationOwner, expiry.AnnotationOnExpiry, "(default " + expiry.DefaultLifecycleKinds + ")",
		string(expiry.NextWarn), string(expiry.NextAct), string(expiry.NextNone), string(expiry.NextOrphan),
		string(expiry.ActionDelete), string(expiry.ActionPause), string(expiry.ActionUninstall),
		"--mode observe|pr|direct", "(default observe)",
	} {
		if !strings.Contains(help, s) {
			t.Errorf("the help does not mention %q", s)
		}
	}
	s := expiry.DefaultSettings()
	if s.WarningBefore != 3*24*time.Hour || !strings.Contains(help, "(default 3d)") {
		t.Errorf("--expiry-warning-before defaults to %s; the help says 3d:\n%s", s.WarningBefore, help)
	}
	if s.NotificationInterval != 24*time.Hour || !strings.Contains(help, "(default 1d)") {
		t.Errorf("--notification-interval defaults to %s; the help says 1d", s.NotificationInterval)
	}
}

// TestTTLNever: kustos.io/ttl: never keeps an object on purpose: nothing is scheduled, it is no
// orphan, and it wins over the namespace's ttl and --default-ttl; --default-ttl takes never too.
func TestTTLNever(t *testing.T) {
	ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n  creationTimestamp: \"2026-05-01T00:00:00Z\"\n  annotations: {kustos.io/ttl: 1d}\n"
	kept := deployment + "  annotations: {kustos.io/owner: ana@example.com, kustos.io/ttl: never}\n"
	code, out, errs := run(t, ns+"---\n"+kept, "--now", now, "--default-ttl", "2d")
	if code != ExitOK || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, `{"key":"expiry/Deployment.apps/n/x","target":"Deployment.apps/n/x","owner":"ana@example.com","deadline":null,"next":"none","at":null,"action":"delete"}`) {
		t.Errorf("plan:\n%s", out)
	}
	code, _, errs = run(t, "", "--now", now, "--default-ttl", "never")
	if code != ExitOK || errs != "" {
		t.Errorf("--default-ttl never: exit %d: %s", code, errs)
	}
}
