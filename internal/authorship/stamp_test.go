package authorship

import (
	"errors"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
)

func TestVerify(t *testing.T) {
	key := strings.Repeat("k", MinKeyBytes)
	s, err := NewSigner([]byte(key + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewSigner([]byte(strings.Repeat("o", MinKeyBytes)))
	created := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	alice := Author{Username: "alice", UID: "u-1", Groups: []string{"team-a", "system:authenticated"},
		Extra: map[string][]string{"scopes": {"a", "b"}}}
	digest, err := SpecDigest(map[string]any{"ttl": "1d"})
	if err != nil {
		t.Fatal(err)
	}
	changed, _ := SpecDigest(map[string]any{"ttl": "2d"})
	sign := func(signer *Signer, ns, name, spec string, a Author, at time.Time) string {
		v, err := signer.Sign(ns, name, spec, a, at)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	good := sign(s, "team-a", "preview", digest, alice, created)
	edit := func(from, to string) string { return strings.Replace(good, from, to, 1) }
	for _, tc := range []struct {
		name  string
		value string
		ns    string
		cname string
		spec  string
		want  error
	}{
		{"as stamped", good, "team-a", "preview", digest, nil},
		{"stamped a minute before creation (clock skew)", sign(s, "team-a", "preview", digest, alice, created.Add(-time.Minute)), "team-a", "preview", digest, nil},
		{"stamped at an update, later", sign(s, "team-a", "preview", digest, alice, created.Add(72*time.Hour)), "team-a", "preview", digest, nil},
		{"missing", "", "team-a", "preview", digest, ErrMissing},
		{"not JSON", "alice", "team-a", "preview", digest, ErrMalformed},
		{"no mac", `{"v":1,"author":{"user":"alice"},"spec":"x","at":1}`, "team-a", "preview", digest, ErrMalformed},
		{"another version", edit(`"v":1`, `"v":2`), "team-a", "preview", digest, ErrMalformed},
		{"user edited", edit(`"user":"alice"`, `"user":"admin"`), "team-a", "preview", digest, ErrForged},
		{"group added", edit(`"team-a"`, `"system:masters"`), "team-a", "preview", digest, ErrForged},
		{"extra edited", edit(`"scopes":["a","b"]`, `"scopes":["a"]`), "team-a", "preview", digest, ErrForged},
		{"time edited", edit(`"at":`, `"at":1`), "team-a", "preview", digest, ErrForged},
		{"another key", sign(other, "team-a", "preview", digest, alice, created), "team-a", "preview", digest, ErrForged},
		{"another namespace", good, "team-b", "preview", digest, ErrForged},
		{"another name", good, "team-a", "other", digest, ErrForged},
		{"spec changed since", good, "team-a", "preview", changed, ErrSpecChanged},
		{"spec digest edited to match", edit(digest, changed), "team-a", "preview", changed, ErrForged},
		{"an earlier Cleaner's stamp", sign(s, "team-a", "preview", digest, alice, created.Add(-MaxSkew-time.Second)), "team-a", "preview", digest, ErrReplayed},
		{"huge", strings.Repeat(" ", 65<<10), "team-a", "preview", digest, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Verify(tc.value, tc.ns, tc.cname, tc.spec, created)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Verify: %v, want %v", err, tc.want)
			}
			if err == nil && (got.Username != "alice" || got.UID != "u-1" || len(got.Groups) != 2 || len(got.Extra["scopes"]) != 2) {
				t.Errorf("author %+v", got)
			}
		})
	}
}

func TestNewSignerRefusesShortKeys(t *testing.T) {
	if _, err := NewSigner([]byte("  short  \n")); err == nil || !strings.Contains(err.Error(), "want at least 32") {
		t.Errorf("got %v", err)
	}
}

func TestFromUserInfoCopies(t *testing.T) {
	u := authenticationv1.UserInfo{Username: "alice", UID: "1", Groups: []string{"g"}, Extra: map[string]authenticationv1.ExtraValue{"x": {"y"}}}
	a := FromUserInfo(u)
	u.Groups[0], u.Extra["x"][0] = "changed", "changed"
	if a.Username != "alice" || a.UID != "1" || a.Groups[0] != "g" || a.Extra["x"][0] != "y" {
		t.Errorf("author %+v shares the request's slices", a)
	}
}
