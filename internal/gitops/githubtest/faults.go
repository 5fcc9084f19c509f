package githubtest

import (
	"encoding/json"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// FaultSpec describes responses to inject. Faults are matched in the order they were
// injected; the first one that matches a request and has Times left answers it.
type FaultSpec struct {
	// Method matches the HTTP method ("" = any).
	Method string
	// PathPattern matches the OpenAPI path template exactly (e.g.
	// "/repos/{owner}/{repo}/pulls"), or the request path (without /api/v3) as a path.Match
	// glob (e.g. "/repos/acme/gitops/pulls/*"); "" or "*" matches any REST endpoint.
	PathPattern string
	// Times is how many requests the fault answers (0 = 1; negative = until cleared).
	Times int
	// Status of the injected response: 500, 502, 503 (server errors), 429 or 403 (GitHub's
	// secondary rate limit, with its real body), or any other status with a generic body.
	// 0 with a Delay only slows the real response down.
	Status int
	// RetryAfter sets the Retry-After header (seconds) when non-zero.
	RetryAfter time.Duration
	// Delay is waited before answering (or before serving the real response when Status is 0).
	Delay time.Duration
}

type fault struct {
	FaultSpec
	left int
}

// SecondaryRateLimitMessage is the message GitHub sends with a secondary rate limit.
const SecondaryRateLimitMessage = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID "

// SecondaryRateLimitDocURL is the documentation_url of a secondary rate limit response (go-github
// recognises it by its suffix).
const SecondaryRateLimitDocURL = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"

// Inject adds a fault.
func (s *Server) Inject(f FaultSpec) {
	if f.Times == 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{FaultSpec: f, left: f.Times})
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

func (s *Server) takeFault(method, template, p string) *fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.faults {
		if f.left == 0 {
			continue
		}
		if f.Method != "" && !strings.EqualFold(f.Method, method) {
			continue
		}
		if pat := f.PathPattern; pat != "" && pat != "*" && pat != template {
			if m, err := path.Match(pat, p); err != nil || !m {
				continue
			}
		}
		if f.left > 0 {
			f.left--
		}
		return f
	}
	return nil
}

func (f *fault) response() (int, http.Header, []byte) {
	h := http.Header{}
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
	}
	var body map[string]any
	switch f.Status {
	case 403, 429:
		body = map[string]any{
			"message":           SecondaryRateLimitMessage + "F00D:1234:5678:9ABC:DEF0.",
			"documentation_url": SecondaryRateLimitDocURL,
		}
	case 500:
		body = map[string]any{"message": "Server Error"}
	case 502:
		body = map[string]any{"message": "Server Error"}
	case 503:
		body = map[string]any{"message": "Service Unavailable"}
	default:
		body = map[string]any{"message": http.StatusText(f.Status)}
	}
	b, _ := json.Marshal(body)
	return f.Status, h, b
}
