package github

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
)

// pushDuring is a base transport that, the first time a branch update goes out, lets a person's
// commit land on the branch first (another client, straight to the server) and answers the
// update 502, so that the client's retry comes after the push.
type pushDuring struct {
	next http.RoundTripper
	once sync.Once
	push func()
}

func (p *pushDuring) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch && endpointTemplate(req.URL.Path) == "/repos/:owner/:repo/git/refs/:ref" {
		pushed := false
		p.once.Do(func() { p.push(); pushed = true })
		if pushed {
			return &http.Response{StatusCode: http.StatusBadGateway, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
		}
	}
	return p.next.RoundTrip(req)
}

// TestUpdateRefFrom: a branch is force-moved only while it points at the commit the caller
// read. A person's commit pushed before the update, or while it waits to be retried, is kept
// and the update refused with ErrRefMoved; an unguarded UpdateRef still overwrites it (what
// GitHub's REST API does).
func TestUpdateRefFrom(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		pushBefore bool // the person's commit lands before the update is sent
		raceRetry  bool // it lands while the update's first attempt fails
		guarded    bool
		wantMoved  bool
	}{
		{name: "unchanged", guarded: true},
		{name: "pushed before", pushBefore: true, guarded: true, wantMoved: true},
		{name: "pushed while retrying", raceRetry: true, guarded: true, wantMoved: true},
		{name: "unguarded overwrites", pushBefore: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var person *Client
			var personSHA string
			race := &pushDuring{next: http.DefaultTransport, push: func() {}}
			if tc.raceRetry {
				race.push = func() {
					if _, err := person.UpdateRef(ctx, "kustos/x", personSHA, true); err != nil {
						t.Error(err)
					}
				}
			}
			c, s, _, ours := limitedServerClient(t, WithBaseTransport(race))
			pc, err := NewClient(Config{APIURL: s.URL(), TokenFile: writeFile(t, "token2", s.Token()), Repository: "acme/gitops"})
			if err != nil {
				t.Fatal(err)
			}
			person = pc
			if _, err := c.CreateRef(ctx, "kustos/x", ours); err != nil {
				t.Fatal(err)
			}
			// The person's commit on top of Kustos's, and Kustos's rebuild on the base.
			cm, err := c.GetCommit(ctx, ours)
			if err != nil {
				t.Fatal(err)
			}
			theirs, err := c.CreateCommit(ctx, "a person's fix", cm.GetTree().GetSHA(), []string{ours})
			if err != nil {
				t.Fatal(err)
			}
			personSHA = theirs.GetSHA()
			rebuilt, err := c.CreateCommit(ctx, "rebuilt", cm.GetTree().GetSHA(), []string{cm.Parents[0].GetSHA()})
			if err != nil {
				t.Fatal(err)
			}
			if tc.pushBefore {
				if _, err := pc.UpdateRef(ctx, "kustos/x", personSHA, true); err != nil {
					t.Fatal(err)
				}
			}
			if tc.guarded {
				err = c.UpdateRefFrom(ctx, "kustos/x", ours, rebuilt.GetSHA())
			} else {
				_, err = c.UpdateRef(ctx, "kustos/x", rebuilt.GetSHA(), true)
			}
			if tc.wantMoved != errors.Is(err, ErrRefMoved) || (!tc.wantMoved && err != nil) {
				t.Fatalf("err = %v, want ErrRefMoved %v", err, tc.wantMoved)
			}
			ref, err := c.GetRef(ctx, "kustos/x")
			if err != nil {
				t.Fatal(err)
			}
			want := rebuilt.GetSHA()
			if tc.wantMoved {
				want = personSHA
			}
			if got := ref.GetObject().GetSHA(); got != want {
				t.Errorf("branch at %s, want %s", got, want)
			}
		})
	}
}
