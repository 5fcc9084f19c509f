package recommend

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// now is the decision time of every test; the inputs' timestamps are relative to it.
const now = "2024-05-01T12:00:00Z"

// TestRun runs the command on the inputs under testdata and compares stdout and stderr with
// testdata/golden/<name>.out and .err (regenerate with go test -run TestRun -update, then
// review the diff). The want fields state the essentials explicitly, so that a golden file
// rewritten by mistake cannot hide a wrong decision.
func TestRun(t *testing.T) {
	tests := []struct {
		name  string
		args  []string // --now is added
		stdin string   // file under testdata fed to stdin
		code  int
		// wantOut and wantErr must each occur in stdout and stderr; wantLines is the number of
		// grow lines on stdout, wantShrinks of shrink lines (the totals line follows them).
		wantOut     []string
		wantErr     []string
		wantLines   int
		wantShrinks int
	}{
		{
			name:      "threshold",
			args:      []string{"-f", "testdata/threshold.yaml"},
			wantOut:   []string{`"resource":"requests.cpu","current":"10","used":"8500m","usedPercent":85,"recommended":"12","trigger":"threshold"`, `requests.cpu should be increased from 10 to 12 (used 8500m of 10 = 85% ≥ 80%)`},
			wantLines: 1,
		},
		{
			name:      "deficit with owner",
			args:      []string{"-f", "testdata/deficit.yaml"},
			wantOut:   []string{`"recommended":"16","trigger":"deficit"`, "ReplicaSet web-59df5cf7b9 cannot create 2 more pods requesting 4 each"},
			wantLines: 1,
		},
		{
			name:      "combined message",
			args:      []string{"-f", "testdata/combined.yaml"},
			wantOut:   []string{`"resource":"limits.memory","current":"8Gi","used":"6Gi","usedPercent":75,`, `"trigger":"deficit"`, "StatefulSet db cannot create 1 more pod requesting 3Gi each"},
			wantLines: 1,
		},
		{
			name:      "events.k8s.io event",
			args:      []string{"-f", "testdata/eventsv1.yaml"},
			wantOut:   []string{`"quota":"mem","resource":"requests.memory","current":"4Gi","used":"3Gi","usedPercent":75,"recommended":"6Gi","trigger":"deficit"`, "Job report cannot create 3 more pods"},
			wantLines: 1,
		},
		{
			name: "kind List",
			args: []string{"--filename", "testdata/list.yaml"},
			// threshold 90% from the namespace: cpu at 85% stays; pods 95% and memory 93.75%
			// are raised, memory by its own 50%.
			wantOut:   []string{`"resource":"count/pods","current":"20","used":"19","usedPercent":95,"recommended":"24"`, `"resource":"requests.memory","current":"16Gi","used":"15Gi","usedPercent":93.75,"recommended":"24Gi"`},
			wantLines: 2,
		},
		{
			name:      "typed List without item kinds",
			args:      []string{"-f", "testdata/typedlist.yaml"},
			wantOut:   []string{`"namespace":"team-e","quota":"pods","resource":"pods","current":"10","used":"9","usedPercent":90,"recommended":"12"`},
			wantLines: 1,
		},
		{
			name:      "JSON",
			args:      []string{"-f", "testdata/quotas.json"},
			wantOut:   []string{`"resource":"requests.storage","current":"100Gi","used":"95Gi","usedPercent":95,"recommended":"120Gi"`},
			wantLines: 1,
		},
		{
			name: "opt-out namespace",
			args: []string{"-f", "testdata/optout.yaml"},
		},
		{
			name:      "invalid annotation",
			args:      []string{"-f", "testdata/invalid-annotation.yaml"},
			wantOut:   []string{`"quota":"batch","resource":"limits.cpu"`, `"quota":"compute","resource":"requests.cpu","current":"10","used":"8500m","usedPercent":85,"recommended":"12"`},
			wantErr:   []string{`warning: namespace team-a: annotation resizer.io/cpu-threshold="abc": not a number; using 80%` + "\n"},
			wantLines: 2,
		},
		{
			name: "lease in cooldown",
			args: []string{"-f", "testdata/cooldown.yaml"},
		},
		{
			name:      "legacy leases",
			args:      []string{"-f", "testdata/legacy-lease.yaml"},
			wantOut:   []string{`"namespace":"team-b","quota":"x-cpu","resource":"requests.cpu","current":"10","used":"9"`},
			wantErr:   []string{"state lease state-team-b-x-cpu has no kustos.io/key and its name fits 2 quotas of the input; ignored"},
			wantLines: 1,
			// team-b-x/cpu, used 1 of 10, without kept peaks: held back by window.
			wantShrinks: 1,
		},
		{
			name:      "lease cooldown shorter than its age",
			args:      []string{"-f", "testdata/cooldown.yaml", "--cooldown", "15m"},
			wantOut:   []string{`"used":"9","usedPercent":90,"recommended":"12","trigger":"threshold"`},
			wantLines: 1,
		},
		{
			name: "event older than last modification",
			args: []string{"-f", "testdata/stale-event.yaml"},
			// Used 8 of 16 is above the band; the pods that cannot be created and the grow on
			// record (the Lease's last modification) hold it back.
			wantOut:     []string{`"blocked":["failed-create","window","recent-grow"]`},
			wantShrinks: 1,
		},
		{
			name: "shrinks from the window the state Leases keep",
			args: []string{"-f", "testdata/shrink.yaml"},
			wantOut: []string{
				`{"namespace":"team-s","quota":"compute","resource":"requests.cpu","current":"10","used":"1","target":"2500m","recommended":"7500m","trigger":"shrink","peak":"2","peakAt":"2024-04-30T14:15:00Z","windowComplete":true,"gates":["step"],"blocked":[],"reclaimable":"7500m",`,
				`{"namespace":"team-s","quota":"gap","resource":"requests.cpu","current":"4","used":"1","target":"1250m","recommended":"3","trigger":"shrink","peak":"1",`,
				`"windowComplete":false,"gates":["step"],"blocked":["window"],"reclaimable":"2750m",`,
				`"quota":"busy","resource":"requests.cpu","current":"10","used":"9","usedPercent":90,"recommended":"12","trigger":"threshold"`,
				`{"totals":{"requests.cpu":{"reclaimable":"10250m","quotas":2,"blocked":{"window":1}}}}` + "\n",
			},
			wantLines:   1,
			wantShrinks: 2,
		},
		{
			name: "missing spec and unreadable event",
			args: []string{"-f", "testdata/missing-spec.yaml"},
			wantErr: []string{
				"notice: team-g/compute: ReplicaSet api-7d9f8 cannot create pods: quota compute requires it to specify limits.cpu for: api\n",
				"warning: event team-g/api-7d9f8.17c9a6b0a8f3e2d5: exceeded quota message:",
			},
			wantShrinks: 1,
		},
		{
			name:      "warnings",
			args:      []string{"-f", "testdata/warnings.yaml"},
			wantOut:   []string{`"namespace":"team-h","quota":"compute","resource":"requests.cpu","current":"4","used":"4","usedPercent":100,"recommended":"4800m"`},
			wantErr:   []string{"notice: team-h/fresh: the quota has no status.hard", "warning: testdata/warnings.yaml:14: state lease kustos-system/state-team-h-compute: annotation resizer.io/last-modified=\"yesterday\" is not an RFC 3339 time"},
			wantLines: 1,
		},
		{
			name:    "bad YAML",
			args:    []string{"-f", "testdata/threshold.yaml", "-f", "testdata/bad-yaml.yaml"},
			code:    2,
			wantErr: []string{"testdata/bad-yaml.yaml:11: invalid YAML: "},
		},
		{
			name:    "bad quantity in third document",
			args:    []string{"-f", "testdata/bad-quantity.yaml"},
			code:    2,
			wantErr: []string{"testdata/bad-quantity.yaml:18: ResourceQuota team-a/memory: quantities must match"},
		},
		{
			name:      "stdin",
			args:      []string{"-f", "-"},
			stdin:     "threshold.yaml",
			wantOut:   []string{`"recommended":"12"`},
			wantLines: 1,
		},
		{
			name:      "stdin by default",
			stdin:     "threshold.yaml",
			wantOut:   []string{`"recommended":"12"`},
			wantLines: 1,
		},
		{
			name:      "several files",
			args:      []string{"-f", "testdata/typedlist.yaml", "-f", "testdata/threshold.yaml"},
			wantOut:   []string{`{"namespace":"team-a",`, `{"namespace":"team-e",`},
			wantLines: 2,
		},
		{
			// requests.cpu at 80% is below --threshold 85%; the deficit still needs 16, more
			// than +50% (15).
			name:      "threshold and increment flags",
			args:      []string{"-f", "testdata/deficit.yaml", "--threshold", "85%", "--increment", "0.5"},
			wantOut:   []string{`"recommended":"16","trigger":"deficit"`},
			wantLines: 1,
		},
		{
			name:    "stdin error names stdin",
			args:    []string{"-f", "testdata/threshold.yaml", "-f", "-"},
			stdin:   "bad-quantity.yaml",
			code:    2,
			wantErr: []string{"<stdin>:18: "},
		},
		{
			name:  "empty input",
			args:  []string{"-f", "-"},
			stdin: "empty.yaml",
		},
		{
			name: "only empty documents",
			args: []string{"-f", "testdata/empty-docs.yaml"},
		},
		{
			name:    "missing file",
			args:    []string{"-f", "testdata/no-such-file.yaml"},
			code:    2,
			wantErr: []string{"testdata/no-such-file.yaml: cannot read: no such file or directory\n"},
		},
		{
			name:    "bad threshold",
			args:    []string{"--threshold", "abc"},
			code:    2,
			wantErr: []string{`kustos recommend: invalid --threshold="abc": not a number`},
		},
		{
			name:    "bad increment",
			args:    []string{"--increment", "0"},
			code:    2,
			wantErr: []string{`kustos recommend: invalid --increment="0": must be greater than 0`},
		},
		{
			name:    "bad now",
			args:    []string{"--now", "yesterday"},
			code:    2,
			wantErr: []string{`kustos recommend: invalid --now "yesterday"`},
		},
		{
			name:    "unknown flag",
			args:    []string{"--dry-run"},
			code:    2,
			wantErr: []string{"kustos recommend: unknown flag --dry-run", "Run 'kustos recommend --help' for usage."},
		},
		{
			name:    "positional argument",
			args:    []string{"testdata/threshold.yaml"},
			code:    2,
			wantErr: []string{`unexpected argument "testdata/threshold.yaml"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdin bytes.Reader
			if tt.stdin != "" {
				data, err := os.ReadFile(filepath.Join("testdata", tt.stdin))
				if err != nil {
					t.Fatal(err)
				}
				stdin.Reset(data)
			}
			var stdout, stderr bytes.Buffer
			args := append([]string{"--now", now}, tt.args...)
			code := Run(args, &stdin, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if tt.code != 0 && stdout.Len() > 0 {
				t.Errorf("stdout must be empty on failure, got:\n%s", stdout.String())
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q; got:\n%s", w, stdout.String())
				}
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q; got:\n%s", w, stderr.String())
				}
			}
			grows, shrinks, totals := countLines(stdout.String())
			if grows != tt.wantLines || shrinks != tt.wantShrinks {
				t.Errorf("%d grow and %d shrink lines, want %d and %d:\n%s", grows, shrinks, tt.wantLines, tt.wantShrinks, stdout.String())
			}
			if want := min(shrinks, 1); totals != want || (totals == 1 && !strings.HasPrefix(lastLine(stdout.String()), `{"totals":`)) {
				t.Errorf("%d totals lines, want %d, last:\n%s", totals, want, stdout.String())
			}
			checkLines(t, stdout.Bytes())
			base := strings.ReplaceAll(tt.name, " ", "-")
			golden(t, base+".out", stdout.Bytes())
			golden(t, base+".err", stderr.Bytes())
		})
	}
}

// countLines counts the grow, shrink and totals lines of out.
func countLines(out string) (grows, shrinks, totals int) {
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		switch {
		case l == "":
		case strings.HasPrefix(l, `{"totals":`):
			totals++
		case strings.Contains(l, `"trigger":"shrink"`):
			shrinks++
		default:
			grows++
		}
	}
	return grows, shrinks, totals
}

func lastLine(out string) string {
	ls := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	return ls[len(ls)-1]
}

// checkLines verifies that every output line is a JSON object with exactly the documented
// fields in the documented order: a grow's, a shrink's (peak and peakAt only with a peak), or
// the totals.
func checkLines(t *testing.T, out []byte) {
	t.Helper()
	grow := []string{"namespace", "quota", "resource", "current", "used", "usedPercent", "recommended", "trigger", "message"}
	shrink := []string{"namespace", "quota", "resource", "current", "used", "target", "recommended", "trigger", "peak", "peakAt", "windowComplete", "gates", "blocked", "reclaimable", "message"}
	for _, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("line is not a JSON object: %s", line)
		}
		var keys []string
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatalf("bad JSON line %s: %v", line, err)
			}
			keys = append(keys, tok.(string))
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("bad JSON line %s: %v", line, err)
			}
			if keys[len(keys)-1] == "usedPercent" {
				if _, ok := v.(float64); !ok {
					t.Errorf("usedPercent is not a number in %s", line)
				}
			}
		}
		want := grow
		switch {
		case slices.Equal(keys, []string{"totals"}):
			continue
		case slices.Contains(keys, "windowComplete"):
			want = slices.DeleteFunc(slices.Clone(shrink), func(k string) bool {
				return (k == "peak" || k == "peakAt") && !slices.Contains(keys, k)
			})
		}
		if strings.Join(keys, ",") != strings.Join(want, ",") {
			t.Errorf("fields %v, want %v", keys, want)
		}
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestRunDuplicateWarnings checks that an invalid annotation is reported once per namespace and
// key even when the namespace is given twice.
func TestRunDuplicateWarnings(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Run([]string{"--now", now, "-f", "testdata/invalid-annotation.yaml", "-f", "testdata/invalid-annotation.yaml"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	if n := strings.Count(stderr.String(), "resizer.io/cpu-threshold"); n != 1 {
		t.Errorf("warning printed %d times, want once:\n%s", n, stderr.String())
	}
	if n := strings.Count(stdout.String(), "\n"); n != 2 {
		t.Errorf("%d recommendations, want 2 (duplicates replace each other):\n%s", n, stdout.String())
	}
}

// TestHelp: -h prints the help on stdout, with run's quota flags and their defaults as written.
func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"-h"}, strings.NewReader(""), &stdout, &stderr); code != ExitOK || stderr.Len() > 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	for _, w := range []string{"Usage: kustos recommend [-f FILE|-]...", "--cooldown duration", "(default 1h)", "--threshold number", "(default 80)", "(default 20%)"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("help lacks %q:\n%s", w, stdout.String())
		}
	}
}
