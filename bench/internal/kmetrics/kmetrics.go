// Package kmetrics is how the control-plane benchmarks (bench/expiry, bench/inactivity) read
// Kustos's own /metrics while it runs: a parser of the Prometheus text format, sums over label
// matches, and the "work queue settled" test that tells when a controller has looked at every
// object it was given.
package kmetrics

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// controller-runtime's and client-go's metrics the benchmarks read.
const (
	Reconciles = "controller_runtime_reconcile_total"        // {controller, result}
	Errors     = "controller_runtime_reconcile_errors_total" // {controller}
	Active     = "controller_runtime_active_workers"         // {controller}
	Depth      = "workqueue_depth"                           // {controller, name, priority}: items ready, not those waiting for a RequeueAfter
	Requests   = "rest_client_requests_total"                // {code, host, method}: Kustos's API requests
)

// Sample is one line of the Prometheus text format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics is one read of /metrics.
type Metrics []Sample

// Parse reads the Prometheus text exposition format (what /metrics serves without an Accept
// header): `name{label="value",...} value [timestamp]`; comments and blank lines are skipped.
func Parse(r io.Reader) (Metrics, error) {
	var out Metrics
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", n, Clip(line, 80), err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func parseLine(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return s, errors.New("no value")
	}
	s.Name, line = line[:i], line[i:]
	if line[0] == '{' {
		line = line[1:]
		for {
			line = strings.TrimLeft(line, " ,")
			if line == "" {
				return s, errors.New("unterminated labels")
			}
			if line[0] == '}' {
				line = line[1:]
				break
			}
			eq := strings.IndexByte(line, '=')
			if eq <= 0 || eq+1 >= len(line) || line[eq+1] != '"' {
				return s, errors.New("bad label")
			}
			name := strings.TrimSpace(line[:eq])
			var v strings.Builder
			j := eq + 2
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) {
					j++
					switch line[j] {
					case 'n':
						v.WriteByte('\n')
					default:
						v.WriteByte(line[j])
					}
					continue
				}
				v.WriteByte(line[j])
			}
			if j >= len(line) {
				return s, errors.New("unterminated label value")
			}
			s.Labels[name] = v.String()
			line = line[j+1:]
		}
	}
	f := strings.Fields(line)
	if len(f) == 0 || len(f) > 2 {
		return s, errors.New("want a value and an optional timestamp")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return s, err
	}
	s.Value = v
	return s, nil
}

// Sum adds the samples of metric name whose labels match (nil: all); found says whether there
// was any.
func (m Metrics) Sum(name string, match func(map[string]string) bool) (total float64, found bool) {
	for _, s := range m {
		if s.Name == name && (match == nil || match(s.Labels)) {
			total += s.Value
			found = true
		}
	}
	return total, found
}

// Delta is the increase of the sum of metric name (all label sets) from before to after.
func Delta(before, after Metrics, name string) float64 {
	a, _ := after.Sum(name, nil)
	b, _ := before.Sum(name, nil)
	return a - b
}

// LabelIs matches the samples whose label name is value.
func LabelIs(name, value string) func(map[string]string) bool {
	return func(l map[string]string) bool { return l[name] == value }
}

// ControllerIs matches the samples of one controller.
func ControllerIs(name string) func(map[string]string) bool { return LabelIs("controller", name) }

// ControllerHasPrefix matches the samples of every controller whose name starts with prefix.
func ControllerHasPrefix(prefix string) func(map[string]string) bool {
	return func(l map[string]string) bool { return strings.HasPrefix(l["controller"], prefix) }
}

// Queue is a detector's work as its metrics say: reconciles so far, and items ready in its
// queues or being reconciled.
type Queue struct {
	Reconciles    float64
	Ready, Active float64
}

// ReadQueue sums the reconciles of the samples reconciled matches (of metric reconciles, e.g.
// Reconciles or a detector's own histogram count) and the ready items (Depth) and active
// workers (Active) of the controllers busy matches. An error if any of them is missing.
func ReadQueue(m Metrics, reconciles string, reconciled, busy func(map[string]string) bool) (Queue, error) {
	var q Queue
	var okR, okD, okA bool
	q.Reconciles, okR = m.Sum(reconciles, reconciled)
	q.Ready, okD = m.Sum(Depth, busy)
	q.Active, okA = m.Sum(Active, busy)
	if !okR || !okD || !okA {
		return q, fmt.Errorf("no %s, %s or %s of the controllers asked for in Kustos's metrics (yet)", reconciles, Depth, Active)
	}
	return q, nil
}

// Idle: nothing ready in the queues, nothing being reconciled.
func (q Queue) Idle() bool { return q.Ready == 0 && q.Active == 0 }

// Settled: at two consecutive reads, at least n reconciles, no more since, and nothing queued
// or being reconciled. controller-runtime queues every object of its initial lists before its
// workers start (it waits for its caches), so an empty queue after n reconciles means each of n
// objects was looked at; two reads close the short gap between taking an item from the queue and
// counting it as active.
func Settled(prev, cur Queue, n float64) bool {
	return cur.Reconciles >= n && cur.Reconciles == prev.Reconciles && prev.Idle() && cur.Idle()
}

// Scraper reads Kustos's /metrics.
type Scraper struct {
	URL    string
	Client *http.Client
}

// NewScraper reads http://addr/metrics with a 5 s timeout.
func NewScraper(addr string) Scraper {
	return Scraper{URL: "http://" + addr + "/metrics", Client: &http.Client{Timeout: 5 * time.Second}}
}

// Scrape reads and parses /metrics once.
func (s Scraper) Scrape(ctx context.Context) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", s.URL, resp.Status)
	}
	return Parse(resp.Body)
}

// FreeAddr returns a loopback address nothing listens on right now, for Kustos's metrics.
func FreeAddr(ctx context.Context) (string, error) {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Clip shortens s to n bytes, marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
