package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Prometheus fault kinds, as the report counts them.
const (
	faultPromDown    = "prometheus-down"
	faultPromPartial = "prometheus-partial"
)

// promTB is the soak's TB for internal/activity/promtest, which also asks whether the test
// failed (to print Prometheus's log): the soak keeps its logs itself.
type promTB struct{ *soakTB }

func (promTB) Failed() bool { return false }

// promProxy stands between Kustos and Prometheus, so that the faults can take Prometheus away
// (every request refused: the connection cut, or 503) or make it answer in part, as Thanos's
// querier does with a store down: "success" without some labs' series, and a warning.
type promProxy struct {
	srv   *http.Server
	ln    net.Listener
	check *Checker

	mu      sync.Mutex
	down    bool
	cut     bool            // while down: cut the connection rather than answer 503
	partial map[string]bool // while answering in part: the labs (ns/name) left out; nil: none
	silent  bool            // the broken mode: left out without a warning
	served  map[string]int  // requests by how they were answered
}

func newPromProxy(ctx context.Context, target string, check *Checker) (*promProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &promProxy{ln: ln, check: check, served: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	director := rp.Director
	rp.Director = func(r *http.Request) {
		director(r)
		// A plain answer, which the partial fault can rewrite; the proxy's own transport
		// asks for gzip and undoes it.
		r.Header.Del("Accept-Encoding")
	}
	rp.ModifyResponse = p.rewrite
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		down, cut := p.down, p.cut
		p.mu.Unlock()
		if down {
			p.count("refused")
			if cut {
				if hj, ok := w.(http.Hijacker); ok {
					if c, _, err := hj.Hijack(); err == nil {
						_ = c.Close()
						return
					}
				}
			}
			http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *promProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *promProxy) close() { _ = p.srv.Close() }

func (p *promProxy) count(how string) {
	p.mu.Lock()
	p.served[how]++
	p.mu.Unlock()
}

type series struct {
	Metric map[string]string `json:"metric"`
}

// rewrite answers a query in part while the fault holds: the series of the labs left out are
// dropped and a warning says a store was not reached, as Thanos says it.
func (p *promProxy) rewrite(resp *http.Response) error {
	p.mu.Lock()
	leave, silent := p.partial, p.silent
	p.mu.Unlock()
	if leave == nil || !strings.HasPrefix(resp.Request.URL.Path, "/api/v1/query") || resp.StatusCode != http.StatusOK {
		p.count("whole")
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	out, dropped, err := dropSeries(body, leave, !silent)
	if err != nil {
		out = body // not an answer this fault knows: passed on as it is
	}
	p.count("partial")
	if dropped > 0 {
		p.count("series-dropped")
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	resp.Header.Del("Content-Encoding")
	return nil
}

// dropSeries takes the series of the labs in leave (ns/name) out of a query answer and, with
// warn, adds a warning; it returns how many it dropped.
func dropSeries(body []byte, leave map[string]bool, warn bool) ([]byte, int, error) {
	var a map[string]json.RawMessage
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, 0, err
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(a["data"], &data); err != nil {
		return nil, 0, err
	}
	var result []json.RawMessage
	if err := json.Unmarshal(data["result"], &result); err != nil {
		return nil, 0, err // not a list: passed on as it came
	}
	kept := []json.RawMessage{}
	dropped := 0
	for _, r := range result {
		var s series
		if err := json.Unmarshal(r, &s); err == nil && leave[s.Metric["namespace"]+"/"+s.Metric["name"]] {
			dropped++
			continue
		}
		kept = append(kept, r)
	}
	var err error
	if data["result"], err = json.Marshal(kept); err != nil {
		return nil, 0, err
	}
	if a["data"], err = json.Marshal(data); err != nil {
		return nil, 0, err
	}
	if !warn {
		out, err := json.Marshal(a)
		return out, dropped, err
	}
	var warnings []string
	if w, ok := a["warnings"]; ok {
		_ = json.Unmarshal(w, &warnings)
	}
	warnings = append(warnings, "partial response: store 10.0.0.7:10901 (soak fault) not reached")
	if a["warnings"], err = json.Marshal(warnings); err != nil {
		return nil, 0, err
	}
	out, err := json.Marshal(a)
	return out, dropped, err
}

// fault holds one Prometheus fault for hold, recording its window with the checker: down (cut
// or 503) or partial (leave names the labs whose series are dropped).
func (p *promProxy) fault(ctx context.Context, kind string, hold time.Duration, cut bool, leave map[string]bool) {
	start := time.Now()
	p.mu.Lock()
	switch kind {
	case faultPromDown:
		p.down, p.cut = true, cut
	case faultPromPartial:
		p.partial = leave
	}
	p.mu.Unlock()
	p.check.PromFault(kind, start, time.Time{})
	sleep(ctx, hold)
	p.mu.Lock()
	p.down, p.cut, p.partial = false, false, nil
	p.mu.Unlock()
	p.check.PromFault(kind, start, time.Now())
}

func (p *promProxy) servedCopy() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.served {
		out[k] = v
	}
	return out
}

func (p *promProxy) String() string { return fmt.Sprint(p.servedCopy()) }
