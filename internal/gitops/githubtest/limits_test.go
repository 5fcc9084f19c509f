package githubtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// manualClock is a clock the test moves.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// answer is what a client without any pacing (a bare http.Client) got.
type answer struct {
	status     int
	retryAfter string
	message    string
	docURL     string
}

func send(t *testing.T, s *Server, method, path, body string) answer {
	t.Helper()
	var rd io.Reader = http.NoBody
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.APIURL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+s.Token())
	req.Header.Set("Accept", "application/vnd.github+json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Message          string `json:"message"`
		DocumentationURL string `json:"documentation_url"`
	}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &e)
	return answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), message: e.Message, docURL: e.DocumentationURL}
}

func (a answer) isSecondary(retryAfter string) bool {
	return a.status == http.StatusForbidden && a.retryAfter == retryAfter &&
		strings.HasPrefix(a.message, "You have exceeded a secondary rate limit") && a.docURL == SecondaryRateLimitDocURL
}

// TestSecondaryLimits: a client that does not pace itself meets each of GitHub's secondary
// limits, answered as GitHub does (403, its message and documentation_url, Retry-After) and
// counted; the answer passes the contract check (New's t.Errorf), and once the window has
// passed, requests are served again.
func TestSecondaryLimits(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	createRef := func(i int, sha string) (string, string, string) {
		return "POST", "/repos/acme/gitops/git/refs", fmt.Sprintf(`{"ref":"refs/heads/b%d","sha":%q}`, i, sha)
	}
	tests := []struct {
		name   string
		limits SecondaryLimits
		// allowed requests of req succeed at the start; the next, 10 s later, is refused by
		// wantLimit until the window of length wait has passed.
		req       func(i int, sha string) (method, path, body string)
		allowed   int
		wantLimit string
		wait      time.Duration
	}{
		{name: "80 content-creating requests a minute (GitHub's number)", req: createRef,
			allowed: 80, wantLimit: LimitContentPerMinute, wait: time.Minute},
		{name: "content-creating requests an hour", limits: SecondaryLimits{ContentPerHour: 12}, req: createRef,
			allowed: 12, wantLimit: LimitContentPerHour, wait: time.Hour},
		{name: "900 points a minute on one endpoint (GitHub's number), a GET costs 1",
			req:     func(int, string) (string, string, string) { return "GET", "/repos/acme/gitops", "" },
			allowed: 900, wantLimit: LimitEndpointPoints, wait: time.Minute},
		{name: "points of one endpoint, a write costs 5", limits: SecondaryLimits{EndpointPointsPerMinute: 22}, req: createRef,
			allowed: 4, wantLimit: LimitEndpointPoints, wait: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &manualClock{now: start}
			s := New(t, Options{Limits: tt.limits, Now: clk.Now})
			sha := s.SeedRepo("acme", "gitops", "main", map[string]string{"a.yaml": "a: 1\n"})
			for i := range tt.allowed {
				m, p, b := tt.req(i, sha)
				if a := send(t, s, m, p, b); a.status >= 300 {
					t.Fatalf("request %d: %+v, want it served", i+1, a)
				}
			}
			// Ten seconds later the window still holds them all: the wait is the rest of it.
			clk.Add(10 * time.Second)
			m, p, b := tt.req(tt.allowed, sha)
			a := send(t, s, m, p, b)
			want := fmt.Sprint(int((tt.wait - 10*time.Second).Seconds()))
			if !a.isSecondary(want) {
				t.Fatalf("request %d: %+v, want GitHub's secondary-limit 403 with Retry-After %s", tt.allowed+1, a, want)
			}
			if got := s.SecondaryLimited(); got != 1 {
				t.Errorf("SecondaryLimited() = %d, want 1", got)
			}
			if got := s.SecondaryLimitedBy()[tt.wantLimit]; got != 1 {
				t.Errorf("SecondaryLimitedBy() = %v, want 1 %s", s.SecondaryLimitedBy(), tt.wantLimit)
			}
			reqs := s.Requests()
			if last := reqs[len(reqs)-1]; last.Limited != tt.wantLimit || last.Status != 403 {
				t.Errorf("logged %+v, want Limited %q", last, tt.wantLimit)
			}
			// Refused requests do nothing and count nothing: asking again at once is refused
			// the same way, and at the end of the window it is served.
			if a := send(t, s, m, p, b); !a.isSecondary(want) {
				t.Errorf("again: %+v", a)
			}
			clk.Add(tt.wait - 10*time.Second)
			if a := send(t, s, m, p, b); a.status >= 300 {
				t.Errorf("after the window: %+v, want it served", a)
			}
		})
	}
}

// TestConcurrencyLimit: requests beyond the cap of concurrent requests are refused while the
// others are in progress.
func TestConcurrencyLimit(t *testing.T) {
	s := New(t, Options{Limits: SecondaryLimits{Concurrent: 2}})
	s.SeedRepo("acme", "gitops", "main", map[string]string{"a.yaml": "a: 1\n"})
	s.Inject(FaultSpec{Method: "GET", PathPattern: "/repos/{owner}/{repo}/git/ref/{ref}", Delay: 500 * time.Millisecond, Times: 2})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a := send(t, s, "GET", "/repos/acme/gitops/git/ref/heads/main", ""); a.status != 200 {
				t.Errorf("slow request: %+v", a)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // both are in progress
	if a := send(t, s, "GET", "/repos/acme/gitops", ""); !a.isSecondary("60") {
		t.Errorf("third concurrent request: %+v, want a secondary-limit 403", a)
	}
	wg.Wait()
	if a := send(t, s, "GET", "/repos/acme/gitops", ""); a.status != 200 {
		t.Errorf("after the others finished: %+v", a)
	}
	if got := s.SecondaryLimitedBy(); got[LimitConcurrent] != 1 || s.SecondaryLimited() != 1 {
		t.Errorf("SecondaryLimitedBy() = %v", got)
	}
}

// TestLimitsOff: a negative limit is not enforced; reads are never content.
func TestLimitsOff(t *testing.T) {
	s := New(t, Options{Limits: SecondaryLimits{ContentPerMinute: -1, ContentPerHour: 3, EndpointPointsPerMinute: -1}})
	sha := s.SeedRepo("acme", "gitops", "main", map[string]string{"a.yaml": "a: 1\n"})
	for i := range 3 {
		if a := send(t, s, "POST", "/repos/acme/gitops/git/refs", fmt.Sprintf(`{"ref":"refs/heads/b%d","sha":%q}`, i, sha)); a.status != 201 {
			t.Fatalf("write %d: %+v", i, a)
		}
	}
	for range 5 {
		if a := send(t, s, "GET", "/repos/acme/gitops/git/ref/heads/b1", ""); a.status != 200 {
			t.Fatalf("read: %+v", a)
		}
	}
	if a := send(t, s, "DELETE", "/repos/acme/gitops/git/refs/heads/b1", ""); a.status != 403 {
		t.Fatalf("4th write: %+v, want 403 (the hourly limit is on)", a)
	}
}
