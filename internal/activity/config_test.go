package activity

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		// wantErr are substrings of the error, in order; none: valid.
		wantErr []string
	}{
		{name: "the defaults' shape", yaml: `
- name: nginx
  available: count(nginx_ingress_controller_config_last_reload_successful)
  data: max by (namespace, service) (max_over_time((timestamp(sum by (namespace, service) (increase(nginx_ingress_controller_requests[{{.Range}}])) > 0))[{{.Window}}:{{.Step}}]))
  labels: {namespace: namespace, name: service}
- name: webssh
  mode: range
  available: up{job="webssh"}
  data: sum by (namespace, name) (rate(webssh_sessions_total[{{.Range}}]))
  target: {name: '{{index .Labels "crownlabs.polito.it/instance"}}'}
  minRange: 2m
`},
		{name: "not a list", yaml: "name: nginx", wantErr: []string{"want a YAML list of sources"}},
		{name: "unknown field", yaml: "- name: a\n  available: up\n  data: up\n  querry: x", wantErr: []string{`unknown field "querry"`}},
		{name: "empty", yaml: "[]", wantErr: []string{"no sources"}},
		{name: "every problem, by position and field", yaml: `
- name: Nginx!
  available: ""
  data: "{{.Windw}}"
  mode: sometimes
  labels: {namespace: "1bad"}
  minRange: soon
- name: ok
  available: up
  data: "{{ .Window"
- name: ok
  available: up
  data: up
  target: {name: "{{.Nam}}"}
`, wantErr: []string{
			`sources[0].name: "Nginx!"`, `sources[0].mode: "sometimes"`, `sources[0].labels.namespace: "1bad"`,
			`sources[0].minRange: "soon"`, `sources[0].available: empty`, `sources[0].data:`, `Windw`,
			`sources[1].data: not a template`, `sources[2].name: "ok" is used twice`, `sources[2].target.name:`, `Nam`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srcs, err := LoadConfig([]byte(tc.yaml))
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("LoadConfig: %v", err)
				}
				if len(srcs) == 0 {
					t.Fatal("no sources")
				}
				return
			}
			if err == nil {
				t.Fatalf("LoadConfig = %d sources, want an error", len(srcs))
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("error %v is not ErrConfig", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestDefaultSourcesCompile(t *testing.T) {
	srcs, err := Compile(DefaultSources())
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 2 || srcs[0].Name != "nginx" || srcs[1].Name != "bastion" {
		t.Fatalf("defaults = %v", Names(srcs))
	}
	ref, err := srcs[0].RefOf(TargetVars{Namespace: "lab", Name: "vm-1"})
	if err != nil || ref != (Ref{Namespace: "lab", Name: "vm-1"}) {
		t.Fatalf("RefOf = %v, %v", ref, err)
	}
	custom, err := Compile([]Source{{Name: "x", Available: "up", Data: "up", Target: TargetTemplates{Name: `{{index .Labels "instance"}}`}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := custom[0].RefOf(TargetVars{Namespace: "lab", Name: "vm-1", Labels: map[string]string{}}); err == nil {
		t.Error("a target without the label its template reads was given a Ref: it would look idle for ever")
	}
	if ref, err := custom[0].RefOf(TargetVars{Namespace: "lab", Name: "vm-1", Labels: map[string]string{"instance": "i-7"}}); err != nil || ref.Name != "i-7" {
		t.Errorf("RefOf = %v, %v", ref, err)
	}
	q, err := srcs[0].render(srcs[0].data, QueryVars{Window: "8w", Step: "8m", Range: "8m"})
	if err != nil || !strings.Contains(q, "[8w:8m]") || !strings.Contains(q, "[8m]") {
		t.Fatalf("rendered %q, %v", q, err)
	}
}

func TestStepFor(t *testing.T) {
	day := 24 * time.Hour
	cases := []struct {
		window, minStep, want time.Duration
	}{
		{time.Hour, time.Minute, time.Minute},                // 60 points: the minimum step
		{7 * day, time.Minute, time.Minute},                  // 10,080 points: fits
		{8 * day, time.Minute, 63 * time.Second},             // 11,520 points at 1m: 62.8s, whole seconds up
		{56 * day, time.Minute, 440 * time.Second},           // 8 weeks: 439.85s → 440s
		{56 * day, time.Hour, time.Hour},                     // a coarser minimum wins
		{11000 * time.Second, time.Millisecond, time.Second}, // never below 1s
	}
	for _, tc := range cases {
		got := StepFor(tc.window, tc.minStep)
		if got != tc.want {
			t.Errorf("StepFor(%s, %s) = %s, want %s", tc.window, tc.minStep, got, tc.want)
		}
		if points := tc.window / got; points > maxPoints {
			t.Errorf("StepFor(%s) = %s: %d points, more than %d", tc.window, got, points, maxPoints)
		}
	}
}

func FuzzLoadConfig(f *testing.F) {
	f.Add([]byte("- name: a\n  available: up\n  data: '{{.Window}}'\n"))
	f.Add([]byte("- name: a\n  available: up\n  data: up\n  target: {name: '{{index .Labels \"x\"}}'}\n"))
	f.Add([]byte("[{name: a, available: '{{', data: up}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		srcs, err := LoadConfig(data)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v is not ErrConfig", err)
			}
			return
		}
		// What loads renders: no template error at the first check.
		for i := range srcs {
			s := &srcs[i]
			for _, tpl := range []func() error{
				func() error {
					_, err := s.render(s.available, QueryVars{Window: "2w", Step: "2m", Range: "5m"})
					return err
				},
				func() error { _, err := s.render(s.data, QueryVars{Window: "2w", Step: "2m", Range: "5m"}); return err },
				func() error {
					_, err := s.RefOf(TargetVars{Namespace: "n", Name: "m", Labels: map[string]string{}, Annotations: map[string]string{}})
					return err
				},
			} {
				if err := tpl(); err != nil && !errors.Is(err, ErrNoRef) {
					t.Fatalf("source %q loaded but does not render: %v", s.Name, err)
				}
			}
		}
	})
}
