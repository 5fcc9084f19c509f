package github

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v60/github"
	dto "github.com/prometheus/client_model/go"
)

const testToken = "ghs_testTokenValue123"

// newTestClient returns a Client for acme/gitops against a local server, with a fake clock
// and no pause between mutations.
func newTestClient(t *testing.T, h http.Handler, opts ...Option) (*Client, *fakeClock) {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	clk := newFakeClock()
	opts = append([]Option{WithClock(clk), WithMutationInterval(0), WithJitter(noJitter)}, opts...)
	c, err := NewClient(Config{APIURL: hs.URL, TokenFile: writeFile(t, "token", testToken), Repository: "acme/gitops"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c, clk
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client under test reports a broken body
}

func TestErrorClassification(t *testing.T) {
	tests := []struct {
		name     string
		code     int
		body     any
		header   map[string]string
		wantKind []error
		wantMsg  string
	}{
		{"404", 404, map[string]any{"message": "Not Found"}, nil, []error{ErrNotFound}, "Not Found"},
		{"409", 409, map[string]any{"message": "Git Repository is empty."}, nil, []error{ErrConflict}, "Git Repository is empty."},
		{"422 with field errors", 422, map[string]any{"message": "Validation Failed",
			"errors": []map[string]any{{"resource": "Issue", "code": "custom", "message": "No commits between main and kustos/x"}}},
			nil, []error{ErrValidation}, "Validation Failed: No commits between main and kustos/x"},
		{"422 already exists", 422, map[string]any{"message": "Reference already exists"}, nil, []error{ErrValidation, ErrAlreadyExists}, "Reference already exists"},
		{"422 not a fast forward", 422, map[string]any{"message": "Update is not a fast forward"}, nil, []error{ErrValidation, ErrConflict}, "not a fast forward"},
		{"401", 401, map[string]any{"message": "Bad credentials"}, nil, []error{ErrUnauthorized}, "Bad credentials"},
		{"403 permissions", 403, map[string]any{"message": "Resource not accessible by integration"}, nil, []error{ErrUnauthorized}, "Resource not accessible"},
		{"500 after retries", 500, map[string]any{"message": "boom"}, nil, []error{ErrUnavailable}, "boom"},
		{"primary rate limit", 403, map[string]any{"message": "API rate limit exceeded"},
			map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1900000000"}, []error{ErrRateLimited}, "retry after"},
		{"secondary rate limit", 429, map[string]any{"message": "secondary"},
			map[string]string{"Retry-After": "7200"}, []error{ErrRateLimited}, "retry after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				writeJSON(w, tt.code, tt.body)
			}), WithMaxRetries(1))
			_, err := c.GetRef(context.Background(), "kustos/quota/a/b")
			for _, k := range tt.wantKind {
				if !errors.Is(err, k) {
					t.Errorf("err %v is not %v", err, k)
				}
			}
			var ae *APIError
			if !errors.As(err, &ae) || !strings.Contains(err.Error(), tt.wantMsg) || !strings.Contains(err.Error(), "get ref kustos/quota/a/b") {
				t.Errorf("err = %v, want APIError with op and %q", err, tt.wantMsg)
			}
			if strings.Contains(err.Error(), testToken) {
				t.Errorf("error leaks the token: %v", err)
			}
			if errors.Is(err, ErrRateLimited) {
				if _, ok := RetryAt(err); !ok {
					t.Errorf("RetryAt(%v) unknown", err)
				}
			}
		})
	}
}

func TestCreatePRAdoptsExisting(t *testing.T) {
	var listQuery string
	mux := http.NewServeMux()
	mux.HandleFunc("POST /repos/acme/gitops/pulls", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 422, map[string]any{"message": "Validation Failed", "errors": []map[string]any{
			{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for acme:kustos/quota/team-a/compute."}}})
	})
	mux.HandleFunc("GET /repos/acme/gitops/pulls", func(w http.ResponseWriter, r *http.Request) {
		listQuery = r.URL.RawQuery
		writeJSON(w, 200, []map[string]any{{"number": 7, "state": "open", "head": map[string]any{"ref": "kustos/quota/team-a/compute", "sha": "abc"}}})
	})
	c, _ := newTestClient(t, mux)
	pr, adopted, err := c.CreatePR(context.Background(), NewPR{Title: "t", Body: "b", Head: "kustos/quota/team-a/compute", Base: "main"})
	if err != nil || !adopted || pr.GetNumber() != 7 {
		t.Fatalf("CreatePR = #%d adopted=%v err=%v, want #7 adopted", pr.GetNumber(), adopted, err)
	}
	if !strings.Contains(listQuery, "head=acme%3Akustos%2Fquota%2Fteam-a%2Fcompute") || !strings.Contains(listQuery, "state=open") {
		t.Errorf("list query %q", listQuery)
	}
}

func TestCreatePRErrors(t *testing.T) {
	tests := []struct {
		name     string
		create   func(w http.ResponseWriter)
		list     []map[string]any
		wantNum  int
		adopted  bool
		wantKind error
	}{
		{"created", func(w http.ResponseWriter) { writeJSON(w, 201, map[string]any{"number": 9}) }, nil, 9, false, nil},
		{"other validation error is returned", func(w http.ResponseWriter) {
			writeJSON(w, 422, map[string]any{"message": "Validation Failed", "errors": []map[string]any{{"message": "No commits between main and x"}}})
		}, nil, 0, false, ErrValidation},
		{"already exists but not found open: error kept", func(w http.ResponseWriter) {
			writeJSON(w, 422, map[string]any{"message": "Validation Failed", "errors": []map[string]any{{"message": "A pull request already exists for acme:x."}}})
		}, []map[string]any{}, 0, false, ErrValidation},
		{"POST 502 is not retried (no duplicate PR)", func(w http.ResponseWriter) { writeJSON(w, 502, map[string]any{"message": "bad gateway"}) }, nil, 0, false, ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var creates int
			mux := http.NewServeMux()
			mux.HandleFunc("POST /repos/acme/gitops/pulls", func(w http.ResponseWriter, r *http.Request) { creates++; tt.create(w) })
			mux.HandleFunc("GET /repos/acme/gitops/pulls", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, tt.list) })
			c, _ := newTestClient(t, mux)
			pr, adopted, err := c.CreatePR(context.Background(), NewPR{Title: "t", Head: "x", Base: "main"})
			if tt.wantKind != nil {
				if !errors.Is(err, tt.wantKind) {
					t.Fatalf("err = %v, want %v", err, tt.wantKind)
				}
			} else if err != nil || pr.GetNumber() != tt.wantNum || adopted != tt.adopted {
				t.Fatalf("got #%d adopted=%v err=%v", pr.GetNumber(), adopted, err)
			}
			if creates != 1 {
				t.Errorf("create calls = %d, want 1", creates)
			}
		})
	}
}

func TestMergePR(t *testing.T) {
	tests := []struct {
		name     string
		code     int
		body     map[string]any
		wantKind error
		wantMsg  string
		calls    int
	}{
		{"merged", 200, map[string]any{"merged": true, "sha": "m1", "message": "Pull Request successfully merged"}, nil, "", 1},
		{"head moved", 409, map[string]any{"message": "Head branch was modified. Review and try the merge again."}, ErrConflict, "head moved", 1},
		{"not mergeable", 405, map[string]any{"message": "Pull Request is not mergeable"}, ErrNotMergeable, "not mergeable", 1},
		{"5xx not retried", 502, map[string]any{"message": "bad gateway"}, ErrUnavailable, "bad gateway", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls int
			var got map[string]any
			mux := http.NewServeMux()
			mux.HandleFunc("PUT /repos/acme/gitops/pulls/5/merge", func(w http.ResponseWriter, r *http.Request) {
				calls++
				if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
					t.Error(err)
				}
				writeJSON(w, tt.code, tt.body)
			})
			c, _ := newTestClient(t, mux)
			res, err := c.MergePR(context.Background(), 5, "headsha1", true, "quota(team-a/compute): raise", "body")
			if tt.wantKind == nil {
				if err != nil || !res.GetMerged() {
					t.Fatalf("MergePR = %+v, %v", res, err)
				}
			} else if !errors.Is(err, tt.wantKind) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("err = %v, want %v with %q", err, tt.wantKind, tt.wantMsg)
			}
			if calls != tt.calls {
				t.Errorf("calls = %d, want %d", calls, tt.calls)
			}
			if got["sha"] != "headsha1" || got["merge_method"] != "squash" || got["commit_title"] != "quota(team-a/compute): raise" {
				t.Errorf("merge request body %v", got)
			}
		})
	}
}

func TestGetPRIsConditional(t *testing.T) {
	var mu sync.Mutex
	var inm []string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/acme/gitops/pulls/3", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inm = append(inm, r.Header.Get("If-None-Match"))
		mu.Unlock()
		w.Header().Set("X-RateLimit-Remaining", "4990")
		w.Header().Set("X-RateLimit-Reset", "1900000000")
		if r.Header.Get("If-None-Match") == `"pr3"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"pr3"`)
		writeJSON(w, 200, map[string]any{"number": 3, "state": "open", "mergeable_state": "clean", "mergeable": true})
	})
	c, _ := newTestClient(t, mux)
	const ep = "/repos/:owner/:repo/pulls/:number"
	before304, before200 := counterValue(t, ep, "GET", "304"), counterValue(t, ep, "GET", "200")
	for i, wantUnchanged := range []bool{false, true, true} {
		pr, unchanged, err := c.GetPR(context.Background(), 3)
		if err != nil || pr.GetNumber() != 3 || pr.GetMergeableState() != "clean" || unchanged != wantUnchanged {
			t.Fatalf("call %d: #%d %q unchanged=%v err=%v", i, pr.GetNumber(), pr.GetMergeableState(), unchanged, err)
		}
	}
	if strings.Join(inm, ",") != `,"pr3","pr3"` {
		t.Errorf("If-None-Match sent: %q", inm)
	}
	if d304, d200 := counterValue(t, ep, "GET", "304")-before304, counterValue(t, ep, "GET", "200")-before200; d304 != 2 || d200 != 1 {
		t.Errorf("kustos_github_api_calls_total deltas: 304=%v 200=%v, want 2 and 1", d304, d200)
	}
}

func counterValue(t *testing.T, labels ...string) float64 {
	t.Helper()
	var m dto.Metric
	if err := apiCalls.WithLabelValues(labels...).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestRefsAndCommits(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	mux := http.NewServeMux()
	record := func(r *http.Request) map[string]any {
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		if len(b) > 0 {
			if err := json.Unmarshal(b, &body); err != nil {
				t.Error(err)
			}
		}
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		return body
	}
	mux.HandleFunc("GET /repos/acme/gitops", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		writeJSON(w, 200, map[string]any{"default_branch": "main"})
	})
	mux.HandleFunc("GET /repos/acme/gitops/git/ref/heads/main", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		writeJSON(w, 200, map[string]any{"ref": "refs/heads/main", "object": map[string]any{"sha": "base1", "type": "commit"}})
	})
	mux.HandleFunc("GET /repos/acme/gitops/git/commits/base1", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		writeJSON(w, 200, map[string]any{"sha": "base1", "tree": map[string]any{"sha": "tree1"}})
	})
	mux.HandleFunc("POST /repos/acme/gitops/git/trees", func(w http.ResponseWriter, r *http.Request) {
		b := record(r)
		if b["base_tree"] != "tree1" {
			t.Errorf("base_tree = %v", b["base_tree"])
		}
		writeJSON(w, 201, map[string]any{"sha": "tree2"})
	})
	mux.HandleFunc("POST /repos/acme/gitops/git/commits", func(w http.ResponseWriter, r *http.Request) {
		b := record(r)
		if b["tree"] != "tree2" || fmt.Sprint(b["parents"]) != "[base1]" || b["message"] != "msg" {
			t.Errorf("commit body %v", b)
		}
		writeJSON(w, 201, map[string]any{"sha": "c2"})
	})
	mux.HandleFunc("POST /repos/acme/gitops/git/refs", func(w http.ResponseWriter, r *http.Request) {
		b := record(r)
		if b["ref"] != "refs/heads/kustos/quota/a/b" || b["sha"] != "c2" {
			t.Errorf("create ref body %v", b)
		}
		writeJSON(w, 422, map[string]any{"message": "Reference already exists"})
	})
	mux.HandleFunc("PATCH /repos/acme/gitops/git/refs/heads/kustos/quota/a/b", func(w http.ResponseWriter, r *http.Request) {
		b := record(r)
		if b["sha"] != "c2" || b["force"] != true {
			t.Errorf("update ref body %v", b)
		}
		writeJSON(w, 200, map[string]any{"ref": "refs/heads/kustos/quota/a/b", "object": map[string]any{"sha": "c2"}})
	})
	mux.HandleFunc("DELETE /repos/acme/gitops/git/refs/heads/kustos/quota/a/b", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		writeJSON(w, 422, map[string]any{"message": "Reference does not exist"})
	})
	c, _ := newTestClient(t, mux)
	ctx := context.Background()
	base, err := c.DefaultBranch(ctx)
	if err != nil || base != "main" {
		t.Fatalf("DefaultBranch = %q, %v", base, err)
	}
	ref, err := c.GetRef(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := c.GetCommit(ctx, ref.GetObject().GetSHA())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.CreateTree(ctx, cm.GetTree().GetSHA(), []*gh.TreeEntry{{Path: gh.String("q.yaml"), Mode: gh.String("100644"), Type: gh.String("blob"), Content: gh.String("x: 1\n")}})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := c.CreateCommit(ctx, "msg", tree.GetSHA(), []string{"base1"})
	if err != nil || nc.GetSHA() != "c2" {
		t.Fatalf("CreateCommit = %v, %v", nc, err)
	}
	if _, err := c.CreateRef(ctx, "kustos/quota/a/b", "c2"); !errors.Is(err, ErrAlreadyExists) || !errors.Is(err, ErrValidation) {
		t.Fatalf("CreateRef err = %v, want ErrAlreadyExists", err)
	}
	if _, err := c.UpdateRef(ctx, "kustos/quota/a/b", "c2", true); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteRef(ctx, "kustos/quota/a/b"); err != nil {
		t.Fatalf("DeleteRef of a missing branch = %v, want nil", err)
	}
	want := "GET /repos/acme/gitops,GET /repos/acme/gitops/git/ref/heads/main,GET /repos/acme/gitops/git/commits/base1," +
		"POST /repos/acme/gitops/git/trees,POST /repos/acme/gitops/git/commits,POST /repos/acme/gitops/git/refs," +
		"PATCH /repos/acme/gitops/git/refs/heads/kustos/quota/a/b,DELETE /repos/acme/gitops/git/refs/heads/kustos/quota/a/b"
	if got := strings.Join(seen, ","); got != want {
		t.Errorf("requests:\n%s\nwant\n%s", got, want)
	}
}

func TestPRHousekeeping(t *testing.T) {
	var mu sync.Mutex
	bodies := map[string]map[string]any{}
	record := func(key string, r *http.Request) map[string]any {
		var b map[string]any
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			t.Errorf("%s: %v", key, err)
		}
		mu.Lock()
		bodies[key] = b
		mu.Unlock()
		return b
	}
	mux := http.NewServeMux()
	mux.HandleFunc("PATCH /repos/acme/gitops/pulls/4", func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			t.Error(err)
		}
		key := "edit"
		if b["state"] != nil {
			key = "close"
		}
		mu.Lock()
		bodies[key] = b
		mu.Unlock()
		writeJSON(w, 200, map[string]any{"number": 4, "title": b["title"]})
	})
	mux.HandleFunc("GET /repos/acme/gitops/pulls/4", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"number": 4, "state": "open"})
	})
	mux.HandleFunc("POST /repos/acme/gitops/issues/4/comments", func(w http.ResponseWriter, r *http.Request) {
		record("comment", r)
		writeJSON(w, 201, map[string]any{"id": 1})
	})
	mux.HandleFunc("POST /repos/acme/gitops/issues/4/labels", func(w http.ResponseWriter, r *http.Request) {
		var b any
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			t.Error(err)
		}
		mu.Lock()
		bodies["labels"] = map[string]any{"labels": b}
		mu.Unlock()
		writeJSON(w, 200, []map[string]any{{"name": "kustos"}})
	})
	mux.HandleFunc("GET /repos/acme/gitops/contents/clusters/prod/quota.yaml", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("ref") != "main" {
			t.Errorf("contents ref = %q", r.URL.Query().Get("ref"))
		}
		writeJSON(w, 200, map[string]any{"type": "file", "encoding": "base64", "sha": "blob1",
			"content": base64.StdEncoding.EncodeToString([]byte("hard:\n  requests.cpu: \"10\" # team-a\n"))})
	})
	mux.HandleFunc("GET /repos/acme/gitops/pulls", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, []any{}) })
	c, _ := newTestClient(t, mux)
	ctx := context.Background()
	if pr, err := c.EditPR(ctx, 4, "new title", "new body"); err != nil || pr.GetTitle() != "new title" {
		t.Fatalf("EditPR = %v, %v", pr, err)
	}
	if err := c.ClosePR(ctx, 4, "namespace gone"); err != nil {
		t.Fatal(err)
	}
	if err := c.AddLabels(ctx, 4, "kustos", "quota"); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(bodies["edit"]) != "map[body:new body title:new title]" || fmt.Sprint(bodies["close"]) != "map[state:closed]" ||
		fmt.Sprint(bodies["comment"]) != "map[body:namespace gone]" || fmt.Sprint(bodies["labels"]["labels"]) != "[kustos quota]" {
		t.Errorf("bodies %v", bodies)
	}
	content, sha, err := c.GetFileContent(ctx, "clusters/prod/quota.yaml", "main")
	if err != nil || sha != "blob1" || !strings.Contains(string(content), "# team-a") {
		t.Fatalf("GetFileContent = %q %q %v", content, sha, err)
	}
	if pr, err := c.FindOpenPR(ctx, "nothing"); pr != nil || err != nil {
		t.Fatalf("FindOpenPR = %v, %v, want nil, nil", pr, err)
	}
}

// TestOutageIsAnErrorNotAHang: GitHub down for longer than the retries → ErrUnavailable, with
// the exact number of attempts and backoff waits.
func TestOutageIsAnErrorNotAHang(t *testing.T) {
	var calls int
	c, clk := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		writeJSON(w, 503, map[string]any{"message": "unavailable"})
	}), WithBackoff(time.Second, 10*time.Second))
	_, _, err := c.GetPR(context.Background(), 1)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if calls != DefaultMaxRetries+1 {
		t.Errorf("calls = %d, want %d", calls, DefaultMaxRetries+1)
	}
	if got := clk.Sleeps(); !equalDurations(got, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}) {
		t.Errorf("sleeps = %v", got)
	}
}

// TestFaultsStillOpenOnePR: a secondary limit and a 5xx on the way to opening a PR delay it
// but open exactly one, honouring Retry-After.
func TestFaultsStillOpenOnePR(t *testing.T) {
	var creates, lists int
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/acme/gitops/pulls", func(w http.ResponseWriter, r *http.Request) {
		lists++
		if lists == 1 {
			writeJSON(w, 500, map[string]any{"message": "boom"})
			return
		}
		writeJSON(w, 200, []any{})
	})
	mux.HandleFunc("POST /repos/acme/gitops/pulls", func(w http.ResponseWriter, r *http.Request) {
		creates++
		if creates == 1 {
			w.Header().Set("Retry-After", "5")
			writeJSON(w, 403, map[string]any{"message": "You have exceeded a secondary rate limit.",
				"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"})
			return
		}
		writeJSON(w, 201, map[string]any{"number": 11})
	})
	c, clk := newTestClient(t, mux)
	ctx := context.Background()
	if pr, err := c.FindOpenPR(ctx, "kustos/x"); err != nil || pr != nil {
		t.Fatalf("FindOpenPR = %v, %v", pr, err)
	}
	pr, adopted, err := c.CreatePR(ctx, NewPR{Title: "t", Head: "kustos/x", Base: "main"})
	if err != nil || adopted || pr.GetNumber() != 11 {
		t.Fatalf("CreatePR = %v %v %v", pr, adopted, err)
	}
	if creates != 2 || lists != 2 {
		t.Errorf("creates=%d lists=%d, want 2 and 2", creates, lists)
	}
	if got := clk.Sleeps(); !equalDurations(got, []time.Duration{DefaultBackoffBase, 5 * time.Second}) {
		t.Errorf("sleeps = %v", got)
	}
}

// TestRateLimitResponsesAfterRetries: when the retries are spent on a rate-limited answer,
// go-github's own rate-limit errors are classified too, with the time to retry.
func TestRateLimitResponsesAfterRetries(t *testing.T) {
	tests := []struct {
		name   string
		code   int
		header map[string]string
		body   map[string]any
	}{
		{"primary", 403, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1800000010", "X-RateLimit-Limit": "5000"},
			map[string]any{"message": "API rate limit exceeded for installation ID 1."}},
		{"secondary", 403, map[string]string{"Retry-After": "5"}, map[string]any{"message": "You have exceeded a secondary rate limit.",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				writeJSON(w, tt.code, tt.body)
			}), WithMaxRetries(0))
			_, err := c.DefaultBranch(context.Background())
			if !errors.Is(err, ErrRateLimited) {
				t.Fatalf("err = %v, want ErrRateLimited", err)
			}
			if at, ok := RetryAt(err); !ok || at.IsZero() {
				t.Errorf("RetryAt = %v, %v", at, ok)
			}
		})
	}
}

func TestGetFileContentLargeFile(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/acme/gitops/contents/big.yaml", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"type": "file", "encoding": "none", "content": "", "sha": "bigblob"})
	})
	mux.HandleFunc("GET /repos/acme/gitops/git/blobs/bigblob", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "application/vnd.github.v3.raw" {
			t.Errorf("Accept %q", r.Header.Get("Accept"))
		}
		_, _ = w.Write([]byte("raw: content\n"))
	})
	mux.HandleFunc("GET /repos/acme/gitops/contents/dir", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, []map[string]any{{"type": "file", "name": "a.yaml"}})
	})
	c, _ := newTestClient(t, mux)
	b, sha, err := c.GetFileContent(context.Background(), "big.yaml", "main")
	if err != nil || sha != "bigblob" || string(b) != "raw: content\n" {
		t.Fatalf("GetFileContent = %q %q %v", b, sha, err)
	}
	if _, _, err := c.GetFileContent(context.Background(), "dir", "main"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("directory: err = %v, want ErrNotFound", err)
	}
}
