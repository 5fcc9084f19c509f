package expiry

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

func TestParsePolicy(t *testing.T) {
	created := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	obj := func(ann map[string]string) Source {
		return Source{Name: "Deployment.apps/team-a/web", Meta: Meta{Annotations: ann}}
	}
	ns := func(labels, ann map[string]string) Source {
		return Source{Name: "Namespace/team-a", Meta: Meta{Labels: labels, Annotations: ann}}
	}
	settings := DefaultSettings()
	settings.Owners = map[string]string{"ana": "ana@example.com"}
	withDefault := settings
	withDefault.DefaultTTL = 72 * time.Hour
	withMail := settings
	withMail.Mail = true

	tests := []struct {
		name      string
		sources   []Source
		scalable  bool
		settings  Settings
		want      Policy
		problems  []string // substrings, one per problem
		wantOwner string
	}{
		{name: "ttl and owner on the object", sources: []Source{obj(map[string]string{AnnotationTTL: "1w2d", AnnotationOwner: "ana@example.com"}), ns(nil, nil)},
			want: Policy{Owner: "ana@example.com", OwnerAddress: "ana@example.com", Deadline: created.Add(9 * 24 * time.Hour),
				From: `kustos.io/ttl="1w2d" on Deployment.apps/team-a/web`, Action: ActionDelete}},
		{name: "expires-at wins over ttl on one object (an extension written back)", sources: []Source{
			obj(map[string]string{AnnotationTTL: "1d", AnnotationExpiresAt: "2026-12-24T18:00:00+01:00", AnnotationOwner: "ana"})},
			want: Policy{Owner: "ana", OwnerAddress: "ana@example.com", Deadline: time.Date(2026, 12, 24, 17, 0, 0, 0, time.UTC),
				From: `kustos.io/expires-at="2026-12-24T18:00:00+01:00" on Deployment.apps/team-a/web`, Action: ActionDelete}},
		{name: "the namespace's owner and ttl, counted from the object's creation", sources: []Source{obj(nil),
			ns(nil, map[string]string{AnnotationTTL: "90m", AnnotationOwner: "Ana <ana@example.com>"})},
			want: Policy{Owner: "Ana <ana@example.com>", OwnerAddress: "ana@example.com", Deadline: created.Add(90 * time.Minute),
				From: `kustos.io/ttl="90m" on Namespace/team-a`, Action: ActionDelete}},
		{name: "the object's lifetime wins over the namespace's", sources: []Source{obj(map[string]string{AnnotationTTL: "1d"}),
			ns(nil, map[string]string{AnnotationTTL: "1w", AnnotationOwner: "ana"})},
			want: Policy{Owner: "ana", OwnerAddress: "ana@example.com", Deadline: created.Add(24 * time.Hour),
				From: `kustos.io/ttl="1d" on Deployment.apps/team-a/web`, Action: ActionDelete}},
		{name: "the default TTL last", sources: []Source{obj(map[string]string{AnnotationOwner: "ana"}), ns(nil, nil)}, settings: withDefault,
			want: Policy{Owner: "ana", OwnerAddress: "ana@example.com", Deadline: created.Add(72 * time.Hour), From: "--default-ttl=3d", Action: ActionDelete}},
		{name: "ttl never on the object wins over the namespace's ttl and the default", settings: withDefault, sources: []Source{
			obj(map[string]string{AnnotationTTL: "Never", AnnotationOwner: "ana"}), ns(nil, map[string]string{AnnotationTTL: "1d"})},
			want: Policy{Owner: "ana", OwnerAddress: "ana@example.com", Never: true, From: `kustos.io/ttl="Never" on Deployment.apps/team-a/web`, Action: ActionDelete}},
		{name: "a namespace's ttl never wins over the default", settings: withDefault, sources: []Source{
			obj(nil), ns(nil, map[string]string{AnnotationTTL: "never", AnnotationOwner: "ana"})},
			want: Policy{Owner: "ana", OwnerAddress: "ana@example.com", Never: true, From: `kustos.io/ttl="never" on Namespace/team-a`, Action: ActionDelete}},
		{name: "no lifetime anywhere", sources: []Source{obj(map[string]string{AnnotationOwner: "ana"}), ns(nil, nil)},
			want: Policy{Owner: "ana", OwnerAddress: "ana@example.com", Action: ActionDelete}},
		{name: "opted out by a namespace label", sources: []Source{obj(map[string]string{AnnotationTTL: "1d"}), ns(map[string]string{LabelIgnore: "true"}, nil)},
			want: Policy{Ignored: true}},
		{name: "opted out by a namespace annotation", sources: []Source{obj(map[string]string{AnnotationTTL: "1d"}), ns(nil, map[string]string{LabelIgnore: "True"})},
			want: Policy{Ignored: true}},
		{name: "an opt-out that is neither true nor false is said, and does not opt out", sources: []Source{obj(map[string]string{AnnotationTTL: "1d", AnnotationOwner: "ana"}),
			ns(map[string]string{LabelIgnore: "yes"}, nil)},
			want: Policy{Owner: "ana", OwnerAddress: "ana@example.com", Deadline: created.Add(24 * time.Hour),
				From: `kustos.io/ttl="1d" on Deployment.apps/team-a/web`, Action: ActionDelete},
			problems: []string{`label kustos.io/expiration-ignore="yes" on Namespace/team-a: want "true" or "false"`}},
		{name: "an unusable ttl leaves the object alone, even with a namespace ttl", sources: []Source{
			obj(map[string]string{AnnotationTTL: "five days", AnnotationOwner: "ana"}), ns(nil, map[string]string{AnnotationTTL: "1d"})},
			want:     Policy{Owner: "ana", OwnerAddress: "ana@example.com", Action: ActionDelete},
			problems: []string{`kustos.io/ttl="five days" on Deployment.apps/team-a/web: not a lifetime (e.g. 90m, 1d, 1w2d, or never): invalid duration`}},
		{name: "a zero ttl is unusable", sources: []Source{obj(map[string]string{AnnotationTTL: "0d"})},
			want: Policy{Action: ActionDelete}, problems: []string{"must be more than 0"}},
		{name: "a date that does not parse", sources: []Source{obj(map[string]string{AnnotationExpiresAt: "2026-12-24", AnnotationOwner: "ana"})},
			want:     Policy{Owner: "ana", OwnerAddress: "ana@example.com", Action: ActionDelete},
			problems: []string{`kustos.io/expires-at="2026-12-24" on Deployment.apps/team-a/web: not an RFC 3339 time`}},
		{name: "an unusable namespace ttl leaves its objects alone", sources: []Source{obj(nil), ns(nil, map[string]string{AnnotationTTL: "soon"})},
			want: Policy{Action: ActionDelete}, problems: []string{`kustos.io/ttl="soon" on Namespace/team-a`}},
		{name: "no mail: an owner name is enough", sources: []Source{obj(map[string]string{AnnotationTTL: "1d", AnnotationOwner: "bob"})},
			want: Policy{Owner: "bob", Deadline: created.Add(24 * time.Hour), From: `kustos.io/ttl="1d" on Deployment.apps/team-a/web`, Action: ActionDelete}},
		{name: "mail: an owner name without an address", settings: withMail, sources: []Source{obj(map[string]string{AnnotationTTL: "1d", AnnotationOwner: "bob"})},
			want:     Policy{Owner: "bob", Deadline: created.Add(24 * time.Hour), From: `kustos.io/ttl="1d" on Deployment.apps/team-a/web`, Action: ActionDelete},
			problems: []string{`kustos.io/owner="bob" on Deployment.apps/team-a/web: no email address for owner "bob" in the owners file`}},
		{name: "mail: an owner that is no address", settings: withMail, sources: []Source{obj(map[string]string{AnnotationTTL: "1d", AnnotationOwner: "ana@@example"})},
			want:     Policy{Owner: "ana@@example", Deadline: created.Add(24 * time.Hour), From: `kustos.io/ttl="1d" on Deployment.apps/team-a/web`, Action: ActionDelete},
			problems: []string{"not an email address"}},
		{name: "pause a workload", sources: []Source{obj(map[string]string{AnnotationTTL: "1d", AnnotationOwner: "ana", AnnotationOnExpiry: "Pause"})}, scalable: true,
			want: Policy{Owner: "ana", OwnerAddress: "ana@example.com", Deadline: created.Add(24 * time.Hour),
				From: `kustos.io/ttl="1d" on Deployment.apps/team-a/web`, Action: ActionPause}},
		{name: "pause what cannot be scaled: left alone", sources: []Source{obj(map[string]string{AnnotationTTL: "1d", AnnotationOwner: "ana", AnnotationOnExpiry: "pause"})},
			want: Policy{Owner: "ana", OwnerAddress: "ana@example.com"}, problems: []string{"no replicas to scale to zero"}},
		{name: "an unknown action: left alone", sources: []Source{obj(map[string]string{AnnotationTTL: "1d", AnnotationOnExpiry: "archive"})}, scalable: true,
			want: Policy{}, problems: []string{`kustos.io/on-expiry="archive"`}},
		{name: "a helm release: ec_owner and ec_ttl from its values", sources: []Source{
			{Name: "HelmRelease/team-a/shop", Helm: true, Meta: Meta{Annotations: map[string]string{HelmValueOwner: "ana", HelmValueTTL: "1d", AnnotationTTL: "1w"}}},
			ns(nil, nil)},
			want: Policy{Owner: "ana", OwnerAddress: "ana@example.com", Deadline: created.Add(24 * time.Hour), From: `ec_ttl="1d" on HelmRelease/team-a/shop`, Action: ActionUninstall}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.settings
			if s.WarningBefore == 0 {
				s = settings
			}
			got, problems := ParsePolicy(created, tt.sources, tt.scalable, s)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("policy = %+v\nwant     %+v", got, tt.want)
			}
			if len(problems) != len(tt.problems) {
				t.Fatalf("problems = %v, want %d", problems, len(tt.problems))
			}
			for i, p := range problems {
				if !strings.Contains(p.String(), tt.problems[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, p.String(), tt.problems[i])
				}
			}
		})
	}
}

// FuzzParsePolicy: any metadata gives a policy or problems, never a panic, and a deadline only
// when a value was usable; the TTL grammar is lifecycle.ParseDuration's, fuzzed there too.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range [][3]string{{"1d", "", "ana@example.com"}, {"1w2d", "", "ana"}, {"", "2026-12-24T18:00:00Z", "x"},
		{"five days", "", ""}, {"9999999999w", "", ""}, {"", "2026-13-01T00:00:00Z", "@"}, {"1.5d", "", "<a@b>"}} {
		f.Add(s[0], s[1], s[2], "pause")
	}
	created := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ttl, at, owner, onExpiry string) {
		ann := map[string]string{AnnotationOwner: owner, AnnotationOnExpiry: onExpiry}
		if ttl != "" {
			ann[AnnotationTTL] = ttl
		}
		if at != "" {
			ann[AnnotationExpiresAt] = at
		}
		p, problems := ParsePolicy(created, []Source{{Name: "Deployment.apps/a/b", Meta: Meta{Annotations: ann}}}, true, DefaultSettings())
		if !p.Deadline.IsZero() && p.From == "" {
			t.Errorf("a deadline without its origin: %+v", p)
		}
		for _, pr := range problems {
			if pr.Err == "" || pr.On == "" {
				t.Errorf("a problem that does not say what or where: %+v", pr)
			}
		}
		if ttl != "" && at == "" && !p.Deadline.IsZero() && p.Deadline.Before(created) {
			t.Errorf("ttl %q gave a deadline %v before creation", ttl, p.Deadline)
		}
		_ = Decide(Snapshot{Now: created, Policy: p, Settings: DefaultSettings()})
	})
}

// TestOwnerDomains: with --owner-domains, an owner whose address (as written, or from the owners
// file) is outside them is refused: an InvalidOwner problem, and the object is treated as having
// no owner (an orphan: never warned, never removed). Without the flag any address goes.
func TestOwnerDomains(t *testing.T) {
	created := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	settings := DefaultSettings()
	settings.Owners = map[string]string{"ana": "ana@example.edu", "eve": "eve@evil.com"}
	settings.OwnerDomains = egress.MustParseHostNames("example.edu", ".example.edu")
	anyDomain := settings
	anyDomain.OwnerDomains = egress.HostNames{}
	withMail := settings
	withMail.Mail = true
	deadline := created.Add(24 * time.Hour)
	from := `kustos.io/ttl="1d" on Deployment.apps/team-a/web`
	for _, tc := range []struct {
		name     string
		owner    string
		settings Settings
		want     Policy
		refused  bool
	}{
		{"an address in the domain", "Ana@EXAMPLE.edu", settings,
			Policy{Owner: "Ana@EXAMPLE.edu", OwnerAddress: "Ana@EXAMPLE.edu", Deadline: deadline, From: from, Action: ActionDelete}, false},
		{"an address in a subdomain", "bo@cs.example.edu", settings,
			Policy{Owner: "bo@cs.example.edu", OwnerAddress: "bo@cs.example.edu", Deadline: deadline, From: from, Action: ActionDelete}, false},
		{"an address outside", "mallory@evil.com", settings, Policy{Deadline: deadline, From: from, Action: ActionDelete}, true},
		{"a look-alike domain", "mallory@example.edu.evil.com", settings, Policy{Deadline: deadline, From: from, Action: ActionDelete}, true},
		{"a display name does not hide the address", `"ana@example.edu" <mallory@evil.com>`, settings, Policy{Deadline: deadline, From: from, Action: ActionDelete}, true},
		{"a name the owners file maps inside", "ana", settings,
			Policy{Owner: "ana", OwnerAddress: "ana@example.edu", Deadline: deadline, From: from, Action: ActionDelete}, false},
		{"a name the owners file maps outside: the final address is checked", "eve", settings, Policy{Deadline: deadline, From: from, Action: ActionDelete}, true},
		{"refused with mail too", "mallory@evil.com", withMail, Policy{Deadline: deadline, From: from, Action: ActionDelete}, true},
		{"no --owner-domains: any address", "mallory@evil.com", anyDomain,
			Policy{Owner: "mallory@evil.com", OwnerAddress: "mallory@evil.com", Deadline: deadline, From: from, Action: ActionDelete}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := Source{Name: "Deployment.apps/team-a/web", Meta: Meta{Annotations: map[string]string{AnnotationTTL: "1d", AnnotationOwner: tc.owner}}}
			got, problems := ParsePolicy(created, []Source{src}, true, tc.settings)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("policy = %+v\nwant     %+v", got, tc.want)
			}
			if !tc.refused {
				if len(problems) != 0 {
					t.Errorf("problems %v", problems)
				}
				return
			}
			if len(problems) != 1 || problems[0].Reason != lifecycle.ReasonInvalidOwner || !strings.Contains(problems[0].Err, "--owner-domains") {
				t.Fatalf("problems %+v, want one %s naming --owner-domains", problems, lifecycle.ReasonInvalidOwner)
			}
			if m := got.Missing(); len(m) != 1 || m[0] != "owner" {
				t.Errorf("missing %v, want the owner", m)
			}
			if d := Decide(Snapshot{Now: deadline, Policy: got, Settings: tc.settings}); d.Next != NextOrphan || d.Warn || d.Change != nil {
				t.Errorf("a refused owner's object at its deadline: %+v, want an orphan left alone", d)
			}
		})
	}
}
