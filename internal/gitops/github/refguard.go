package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ErrRefMoved: a branch Kustos was about to force-update no longer points at the commit Kustos
// read (someone pushed in between); nothing was changed.
var ErrRefMoved = errors.New("branch moved since it was read")

// GitHub's REST API moves a branch with no compare-and-set: a force-update overwrites whatever
// the branch holds. Kustos rebuilds its own pull requests' branches that way, after checking
// that their head is its own commit; a person's commit pushed between that check and the
// update would be lost. refGuard narrows the gap to one request: for an update carrying the
// head it expects (UpdateRefFrom), it reads the branch immediately before the update goes on
// the wire — after the mutation interval, rate-limit waits and backoff above it, and again
// before each retry — and refuses with ErrRefMoved when the branch moved.
type refGuard struct {
	next http.RoundTripper
}

type expectedHeadKey struct{}

func withExpectedHead(ctx context.Context, sha string) context.Context {
	return context.WithValue(ctx, expectedHeadKey{}, sha)
}

func (g *refGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	want, _ := req.Context().Value(expectedHeadKey{}).(string)
	if want == "" || req.Method != http.MethodPatch || endpointTemplate(req.URL.Path) != "/repos/:owner/:repo/git/refs/:ref" {
		return g.next.RoundTrip(req)
	}
	got, refused, err := g.head(req)
	switch {
	case err != nil:
		closeBody(req)
		return nil, err
	case refused != nil:
		// GitHub refused the read (a rate limit, a 5xx, the branch gone): its answer is the
		// update's, for the layers above to wait, retry or report as they would the update's.
		closeBody(req)
		return refused, nil
	case got != want && got != updateSHA(req):
		closeBody(req)
		return nil, fmt.Errorf("%w: it points at %s, not %s", ErrRefMoved, got, want)
	}
	// From the head expected, or already at the new one (an earlier attempt of this update
	// landed and its answer was lost): sending it (again) changes nothing else.
	return g.next.RoundTrip(req)
}

// updateSHA is the commit an update of a ref moves it to ("" when its body cannot be read).
func updateSHA(req *http.Request) string {
	if req.GetBody == nil {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	var u struct {
		SHA string `json:"sha"`
	}
	if json.NewDecoder(io.LimitReader(body, 1<<16)).Decode(&u) != nil {
		return ""
	}
	return u.SHA
}

// head reads the branch the update names (GET …/git/ref/heads/<branch>, with the update's
// credentials); refused is GitHub's answer when it is not 200.
func (g *refGuard) head(update *http.Request) (sha string, refused *http.Response, err error) {
	u := *update.URL
	u.Path = strings.Replace(u.Path, "/git/refs/", "/git/ref/", 1)
	u.RawPath = ""
	get, err := http.NewRequestWithContext(update.Context(), http.MethodGet, u.String(), http.NoBody)
	if err != nil {
		return "", nil, err
	}
	for _, h := range []string{"Authorization", "Accept", "User-Agent", "X-GitHub-Api-Version"} {
		if v := update.Header.Get(h); v != "" {
			get.Header.Set(h, v)
		}
	}
	resp, err := g.next.RoundTrip(get)
	if err != nil {
		return "", nil, fmt.Errorf("reading the branch before moving it: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", resp, nil
	}
	defer drain(resp)
	var ref struct {
		Object struct {
			SHA string `json:"sha"`
		} `json:"object"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&ref); err != nil {
		return "", nil, fmt.Errorf("reading the branch before moving it: %w", err)
	}
	return ref.Object.SHA, nil, nil
}

// UpdateRefFrom force-moves branch to sha only if it still points at from (read just before the
// update); ErrRefMoved, with nothing changed, if someone moved it.
func (c *Client) UpdateRefFrom(ctx context.Context, branch, from, sha string) error {
	_, err := c.UpdateRef(withExpectedHead(ctx, from), branch, sha, true)
	return err
}
