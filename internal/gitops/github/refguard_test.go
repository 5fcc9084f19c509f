package github

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
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

// loseFirstAnswer carries the first branch update out on the server and answers it 502: the
// update landed, its answer was lost.
type loseFirstAnswer struct {
	next http.RoundTripper
	once sync.Once
}

func (l *loseFirstAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodPatch && endpointTemplate(req.URL.Path) == "/repos/:owner/:repo/git/refs/:ref" {
		lost := false
		l.once.Do(func() { lost = true })
		if lost {
			drain(resp)
			return &http.Response{StatusCode: http.StatusBadGateway, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
		}
	}
	return resp, err
}

// TestUpdateRefFromRetries: the guard's own read and a retry of an update behave as the update
// would. An update that landed but whose answer was lost is retried and succeeds (the branch is
// already at the new commit: no ErrRefMoved); a read of the branch answered with a secondary
// rate limit is waited out and retried like the update itself; a branch deleted is not found.
func TestUpdateRefFromRetries(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T, opts ...Option) (*Client, string, string) {
		c, _, _, ours := limitedServerClient(t, opts...)
		if _, err := c.CreateRef(ctx, "kustos/x", ours); err != nil {
			t.Fatal(err)
		}
		cm, err := c.GetCommit(ctx, ours)
		if err != nil {
			t.Fatal(err)
		}
		rebuilt, err := c.CreateCommit(ctx, "rebuilt", cm.GetTree().GetSHA(), []string{cm.Parents[0].GetSHA()})
		if err != nil {
			t.Fatal(err)
		}
		return c, ours, rebuilt.GetSHA()
	}
	t.Run("answer lost", func(t *testing.T) {
		c, ours, rebuilt := setup(t, WithBaseTransport(&loseFirstAnswer{next: http.DefaultTransport}))
		if err := c.UpdateRefFrom(ctx, "kustos/x", ours, rebuilt); err != nil {
			t.Fatalf("UpdateRefFrom after a lost answer = %v, want success", err)
		}
	})
	t.Run("read rate limited", func(t *testing.T) {
		c, s, _, ours := limitedServerClient(t)
		if _, err := c.CreateRef(ctx, "kustos/x", ours); err != nil {
			t.Fatal(err)
		}
		s.Inject(githubtest.FaultSpec{Method: http.MethodGet, PathPattern: "/repos/{owner}/{repo}/git/ref/{ref}", Status: http.StatusTooManyRequests, RetryAfter: time.Second})
		if err := c.UpdateRefFrom(ctx, "kustos/x", ours, ours); err != nil {
			t.Fatalf("UpdateRefFrom after a rate-limited read = %v, want it waited out and done", err)
		}
	})
	t.Run("branch gone", func(t *testing.T) {
		c, ours, rebuilt := setup(t)
		if err := c.DeleteRef(ctx, "kustos/x"); err != nil {
			t.Fatal(err)
		}
		if err := c.UpdateRefFrom(ctx, "kustos/x", ours, rebuilt); !errors.Is(err, ErrNotFound) {
			t.Fatalf("UpdateRefFrom of a deleted branch = %v, want ErrNotFound", err)
		}
	})
}
