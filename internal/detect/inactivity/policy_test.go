package inactivity

import (
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

func TestParsePolicy(t *testing.T) {
	obj := func(a map[string]string) Source {
		return Source{Name: "Deployment.apps/lab/vm-1", Meta: Meta{Annotations: a}}
	}
	tpl := func(a map[string]string) Source {
		return Source{Name: "Template/lab/ubuntu", Meta: Meta{Annotations: a}}
	}
	ns := func(a map[string]string) Source { return Source{Name: "Namespace/lab", Meta: Meta{Annotations: a}} }
	day := 24 * time.Hour
	cases := []struct {
		name     string
		sources  []Source
		settings func(*Settings)
		want     Policy
		problem  string // substring of the one problem expected
		reason   string // its Event reason, when not ReasonInvalidInactivity
	}{
		{name: "nothing anywhere, no default: never", sources: []Source{obj(nil), ns(nil)},
			want: Policy{MaxAlerts: 3, Action: ActionPause}},
		{name: "the flag's default", sources: []Source{obj(nil)}, settings: func(s *Settings) { s.Timeout = 7 * day },
			want: Policy{Timeout: 7 * day, MaxAlerts: 3, Action: ActionPause, From: "--inactivity-timeout=7d"}},
		{name: "the template wins over the namespace, the object over both", sources: []Source{
			obj(map[string]string{AnnotationMaxAlerts: "1"}),
			tpl(map[string]string{AnnotationTimeout: "2d", AnnotationPersistent: "false"}),
			ns(map[string]string{AnnotationTimeout: "1w", AnnotationMaxAlerts: "5"}),
		}, want: Policy{Timeout: 2 * day, MaxAlerts: 1, Action: ActionDelete, From: `kustos.io/inactivity-timeout="2d" on Template/lab/ubuntu`}},
		{name: "never on the object beats a namespace timeout", sources: []Source{obj(map[string]string{AnnotationTimeout: "never"}), ns(map[string]string{AnnotationTimeout: "1d"})},
			want: Policy{MaxAlerts: 3, Action: ActionPause, From: `kustos.io/inactivity-timeout="never" on Deployment.apps/lab/vm-1`}},
		{name: "namespace opted out", sources: []Source{obj(map[string]string{AnnotationTimeout: "1d"}), ns(map[string]string{AnnotationIgnore: "true"})},
			want: Policy{Ignored: true}},
		{name: "deletion by default only when the flag says so", sources: []Source{obj(map[string]string{AnnotationTimeout: "1d"})},
			settings: func(s *Settings) { s.PersistentDefault = false },
			want:     Policy{Timeout: day, MaxAlerts: 3, Action: ActionDelete, From: `kustos.io/inactivity-timeout="1d" on Deployment.apps/lab/vm-1`}},
		{name: "owner resolved through the owners file", sources: []Source{obj(map[string]string{AnnotationTimeout: "1d", AnnotationOwner: "ana"})},
			settings: func(s *Settings) { s.Owners = map[string]string{"ana": "ana@example.org"} },
			want:     Policy{Timeout: day, MaxAlerts: 3, Action: ActionPause, From: `kustos.io/inactivity-timeout="1d" on Deployment.apps/lab/vm-1`, Owner: "ana", OwnerAddress: "ana@example.org"}},
		{name: "probe URL", sources: []Source{obj(map[string]string{AnnotationProbeURL: "https://exam.lab.example/healthz"})},
			want: Policy{MaxAlerts: 3, Action: ActionPause, ProbeURL: "https://exam.lab.example/healthz"}},
		// Problems: the target is left alone (no timeout, no probe).
		{name: "bad timeout", sources: []Source{obj(map[string]string{AnnotationTimeout: "soon"})},
			want: Policy{}, problem: `kustos.io/inactivity-timeout="soon" on Deployment.apps/lab/vm-1: not a timeout`},
		{name: "bad max alerts", sources: []Source{obj(map[string]string{AnnotationTimeout: "1d"}), ns(map[string]string{AnnotationMaxAlerts: "-1"})},
			want: Policy{}, problem: `kustos.io/max-alerts="-1" on Namespace/lab: want a whole number`},
		{name: "bad persistent", sources: []Source{obj(map[string]string{AnnotationTimeout: "1d", AnnotationPersistent: "maybe"})},
			want: Policy{}, problem: `want "true" (pause) or "false" (delete)`},
		{name: "probe URL with credentials is refused and not echoed", sources: []Source{obj(map[string]string{AnnotationProbeURL: "http://u:secret@exam/x"})},
			want: Policy{}, problem: `must not carry credentials`},
		{name: "probe URL not http", sources: []Source{obj(map[string]string{AnnotationProbeURL: "file:///etc/passwd"})},
			want: Policy{}, problem: `want an http or https URL`},
		{name: "owner without an address when mail is on", sources: []Source{obj(map[string]string{AnnotationTimeout: "1d", AnnotationOwner: "bob"})},
			settings: func(s *Settings) { s.Mail = true },
			want:     Policy{Owner: "bob"}, problem: `no email address for owner "bob"`},
		// --owner-domains: an address outside is refused (InvalidOwner) and the target goes on as
		// one without an owner: alerts are Events only, the pause comes on schedule.
		{name: "an owner inside --owner-domains", sources: []Source{obj(map[string]string{AnnotationTimeout: "1d", AnnotationOwner: "ana@Lab.Example.org"})},
			settings: func(s *Settings) { s.OwnerDomains = egress.MustParseHostNames("lab.example.org") },
			want:     Policy{Timeout: day, MaxAlerts: 3, Action: ActionPause, From: `kustos.io/inactivity-timeout="1d" on Deployment.apps/lab/vm-1`, Owner: "ana@Lab.Example.org", OwnerAddress: "ana@Lab.Example.org"}},
		{name: "an owner outside --owner-domains: no owner", sources: []Source{obj(map[string]string{AnnotationTimeout: "1d", AnnotationOwner: "mallory@evil.com"})},
			settings: func(s *Settings) { s.OwnerDomains = egress.MustParseHostNames("lab.example.org"); s.Mail = true },
			want:     Policy{Timeout: day, MaxAlerts: 3, Action: ActionPause, From: `kustos.io/inactivity-timeout="1d" on Deployment.apps/lab/vm-1`},
			problem:  `kustos.io/owner="mallory@evil.com" on Deployment.apps/lab/vm-1: address mallory@evil.com is outside --owner-domains=lab.example.org`, reason: lifecycle.ReasonInvalidOwner},
		{name: "an owners-file address outside --owner-domains", sources: []Source{obj(map[string]string{AnnotationTimeout: "1d", AnnotationOwner: "eve"})},
			settings: func(s *Settings) {
				s.OwnerDomains, s.Owners = egress.MustParseHostNames(".example.org"), map[string]string{"eve": "eve@example.org"}
			},
			want:    Policy{Timeout: day, MaxAlerts: 3, Action: ActionPause, From: `kustos.io/inactivity-timeout="1d" on Deployment.apps/lab/vm-1`},
			problem: `address eve@example.org is outside --owner-domains=.example.org`, reason: lifecycle.ReasonInvalidOwner},
		{name: "a bad opt-out value is said and not taken", sources: []Source{obj(nil), ns(map[string]string{AnnotationIgnore: "yes"})},
			want: Policy{MaxAlerts: 3, Action: ActionPause}, problem: `want "true" or "false"; not opted out`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := DefaultSettings()
			if tc.settings != nil {
				tc.settings(&s)
			}
			got, problems := ParsePolicy(tc.sources, s)
			if got != tc.want {
				t.Errorf("policy = %+v, want %+v", got, tc.want)
			}
			switch {
			case tc.problem == "" && len(problems) > 0:
				t.Errorf("problems = %v, want none", problems)
			case tc.problem != "" && (len(problems) != 1 || !strings.Contains(problems[0].String(), tc.problem)):
				t.Errorf("problems = %v, want one saying %q", problems, tc.problem)
			}
			if len(problems) == 1 && problems[0].Reason != tc.reason {
				t.Errorf("problem reason %q, want %q", problems[0].Reason, tc.reason)
			}
			for _, p := range problems {
				if strings.Contains(p.String(), "secret") {
					t.Errorf("a problem repeats a credential: %s", p)
				}
			}
		})
	}
}

func TestParsePause(t *testing.T) {
	for in, want := range map[string]string{"": "", "spec.running=false": "spec.running=false", "\tspec.paused = true": "spec.paused=true"} {
		p, err := ParsePause(in)
		got := ""
		if len(p.Field) > 0 {
			got = strings.Join(p.Field, ".") + "=" + p.Value
		}
		if err != nil || got != want {
			t.Errorf("ParsePause(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"spec.running", "spec..running=false", "=false", "metadata.labels.x=y", "status.phase=Off"} {
		if _, err := ParsePause(bad); err == nil {
			t.Errorf("ParsePause(%q) accepted", bad)
		}
	}
}

func FuzzParsePolicy(f *testing.F) {
	f.Add("1d", "3", "true", "false", "https://exam/x", "ana@example.org")
	f.Add("never", "0", "false", "true", "", "")
	f.Add("1w2d", "x", "", "maybe", "http://u:p@h", "<bad")
	f.Fuzz(func(t *testing.T, timeout, maxAlerts, persistent, ignore, probe, owner string) {
		a := map[string]string{AnnotationTimeout: timeout, AnnotationMaxAlerts: maxAlerts, AnnotationPersistent: persistent,
			AnnotationIgnore: ignore, AnnotationProbeURL: probe, AnnotationOwner: owner}
		s := DefaultSettings()
		s.Mail = true
		p, problems := ParsePolicy([]Source{{Name: "Deployment.apps/lab/vm-1", Meta: Meta{Annotations: a}}}, s)
		if p.Timeout < 0 || p.MaxAlerts < 0 || p.MaxAlerts > 100 {
			t.Fatalf("policy out of range: %+v", p)
		}
		if len(problems) > 0 && (p.Timeout != 0 || p.ProbeURL != "") && !strings.Contains(problems[0].Err, "not opted out") {
			t.Fatalf("a problem but the target is not left alone: %+v %v", p, problems)
		}
		for _, pr := range problems {
			if len(pr.String()) > 1024 {
				t.Fatalf("unbounded problem message (%d bytes)", len(pr.String()))
			}
		}
	})
}
