package authorship

import (
	"strings"
	"testing"
	"time"
)

// FuzzVerify: whatever a tenant writes into the annotation, Verify returns an error or an
// author the key signed — never a panic, and never an author for a value it did not sign.
func FuzzVerify(f *testing.F) {
	s, err := NewSigner([]byte(strings.Repeat("k", MinKeyBytes)))
	if err != nil {
		f.Fatal(err)
	}
	created := time.Unix(1_800_000_000, 0)
	good, _ := s.Sign("team-a", "p", "digest", Author{Username: "alice", Groups: []string{"g"}, Extra: map[string][]string{"x": {"y"}}}, created)
	for _, seed := range []string{good, "", "{}", `{"v":1}`, `{"v":1,"author":{"user":"a"},"spec":"digest","at":1800000000,"mac":"x"}`, "null", "[]"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		a, err := s.Verify(value, "team-a", "p", "digest", created)
		if err != nil {
			return
		}
		if value != good {
			// Another encoding of the signed stamp (JSON allows some): it must name the same author.
			if a.Username != "alice" || len(a.Groups) != 1 || a.Groups[0] != "g" {
				t.Fatalf("verified %q as %+v", value, a)
			}
		}
	})
}
