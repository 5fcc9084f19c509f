package vsphere

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseNotes(t *testing.T) {
	tests := []struct {
		name     string
		notes    string
		want     Notes
		problems []string // substrings, one per problem, in order
	}{
		{name: "empty", notes: ""},
		{name: "env-cleaner's keys", notes: "EC_OWNER=ana\nEC_TTL=1w\n", want: Notes{Owner: "ana", TTL: "1w", OwnerKey: NoteOwner, TTLKey: NoteTTL}},
		{name: "Kustos's keys, spaces and CRLF", notes: "  kustos.io/owner = ana@example.com \r\nkustos.io/ttl=36h\r\n",
			want: Notes{Owner: "ana@example.com", TTL: "36h", OwnerKey: NoteKustosOwner, TTLKey: NoteKustosTTL}},
		{name: "free text and other metadata are left alone", notes: "Build agent for team CI.\nDo not touch!\nOS=debian 12\nEC_OWNER=bob\nEC_TTL=2d",
			want: Notes{Owner: "bob", TTL: "2d", OwnerKey: NoteOwner, TTLKey: NoteTTL}},
		{name: "never", notes: "EC_OWNER=bob\nEC_TTL=never", want: Notes{Owner: "bob", TTL: "never", OwnerKey: NoteOwner, TTLKey: NoteTTL}},
		{name: "the same value twice is fine", notes: "EC_TTL=1d\nkustos.io/ttl=1d", want: Notes{TTL: "1d", TTLKey: NoteTTL}},
		{name: "an unusable lifetime names its line; the owner stays", notes: "EC_OWNER=ana\n\nEC_TTL=soon",
			want: Notes{Owner: "ana", OwnerKey: NoteOwner}, problems: []string{`line 3: EC_TTL="soon": not a lifetime`}},
		{name: "a zero lifetime", notes: "EC_TTL=0d", problems: []string{`line 1: EC_TTL="0d"`}},
		{name: "an empty value", notes: "EC_OWNER=\nEC_TTL=1d", want: Notes{TTL: "1d", TTLKey: NoteTTL}, problems: []string{`line 1: EC_OWNER="": the value is empty`}},
		{name: "two different lifetimes: neither is used", notes: "EC_TTL=1d\nkustos.io/ttl=2w\nEC_OWNER=ana",
			want: Notes{Owner: "ana", OwnerKey: NoteOwner}, problems: []string{"line 2: EC_TTL=\"1d\": 2 different lifetimes"}},
		{name: "two different owners: neither is used", notes: "EC_OWNER=ana\nEC_OWNER=bob", problems: []string{"2 different owners"}},
		{name: "an owner with spaces", notes: "EC_OWNER=Ana Lopez", problems: []string{`line 1: EC_OWNER="Ana Lopez": an owner is one name`}},
		{name: "lower-case env-cleaner key", notes: "ec_ttl=1d", problems: []string{"line 1: ec_ttl=\"1d\": keys are upper case"}},
		{name: "a line too long", notes: "EC_OWNER=" + strings.Repeat("a", 2000), problems: []string{"longer than 1024 bytes"}},
		{name: "notes too long: the first 64 KiB are read", notes: "EC_OWNER=ana\nEC_TTL=1d\n" + strings.Repeat("x", MaxNotes),
			want: Notes{Owner: "ana", TTL: "1d", OwnerKey: NoteOwner, TTLKey: NoteTTL}, problems: []string{"only the first 65536 are read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problems := ParseNotes(tt.notes)
			if got != tt.want {
				t.Errorf("notes = %+v, want %+v", got, tt.want)
			}
			if len(problems) != len(tt.problems) {
				t.Fatalf("problems = %v, want %d", problems, len(tt.problems))
			}
			for i, p := range problems {
				if !strings.Contains(p.String(), tt.problems[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, p, tt.problems[i])
				}
			}
		})
	}
}

// FuzzParseNotes: any notes parse without a panic, within bounds, and what is returned is usable.
func FuzzParseNotes(f *testing.F) {
	for _, s := range []string{"", "EC_OWNER=ana\nEC_TTL=1w", "kustos.io/ttl=never", "EC_TTL=1d\nEC_TTL=2d", "=\n==\n=x", "EC_TTL=99999999999w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, notes string) {
		n, problems := ParseNotes(notes)
		if len(n.Owner) > maxLine || len(n.TTL) > maxLine {
			t.Fatalf("a value longer than a line: %+v", n)
		}
		if strings.ContainsAny(n.Owner, " \t\n,;\"") {
			t.Fatalf("unusable owner %q", n.Owner)
		}
		if (n.Owner == "") != (n.OwnerKey == "") || (n.TTL == "") != (n.TTLKey == "") {
			t.Fatalf("a value without its key: %+v", n)
		}
		for _, p := range problems {
			if s := p.String(); utf8.ValidString(notes) && !utf8.ValidString(s) {
				t.Fatalf("problem %q is not valid UTF-8", s)
			}
		}
	})
}
