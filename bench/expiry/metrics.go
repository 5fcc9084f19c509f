package main

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

// What the bench reads from Kustos's /metrics (controller-runtime's and client-go's metrics).
const (
	metricReconciles = "controller_runtime_reconcile_total" // {controller, result}
	metricActive     = "controller_runtime_active_workers"  // {controller}
	metricDepth      = "workqueue_depth"                    // {controller, name, priority}: items ready, not those waiting for a RequeueAfter
	metricRequests   = "rest_client_requests_total"         // {code, host, method}: Kustos's API requests
	metricErrors     = "controller_runtime_reconcile_errors_total"

	// deploymentController is the name of the expiry detector's controller for Deployments
	// ("expiry-" + kind.group in lower case); expiryPrefix starts the names of all of its
	// controllers (Namespaces too).
	deploymentController = "expiry-deployment.apps"
	expiryPrefix         = "expiry-"
)

// metricSample is one line of the Prometheus text format.
type metricSample struct {
	name   string
	labels map[string]string
	value  float64
}

type metrics []metricSample

// parseMetrics reads the Prometheus text exposition format (what /metrics serves without an
// Accept header): `name{label="value",...} value [timestamp]`; comments and blank lines are
// skipped.
func parseMetrics(r io.Reader) (metrics, error) {
	var out metrics
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseMetricLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", n, clip(line, 80), err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func parseMetricLine(line string) (metricSample, error) {
	s := metricSample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return s, errors.New("no value")
	}
	s.name, line = line[:i], line[i:]
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
			s.labels[name] = v.String()
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
	s.value = v
	return s, nil
}

// sum adds the samples of metric name whose labels match (nil: all); found says whether there
// was any.
func (m metrics) sum(name string, match func(map[string]string) bool) (total float64, found bool) {
	for _, s := range m {
		if s.name == name && (match == nil || match(s.labels)) {
			total += s.value
			found = true
		}
	}
	return total, found
}

func controllerIs(name string) func(map[string]string) bool {
	return func(l map[string]string) bool { return l["controller"] == name }
}

func controllerHasPrefix(prefix string) func(map[string]string) bool {
	return func(l map[string]string) bool { return strings.HasPrefix(l["controller"], prefix) }
}

// queueState is the expiry detector's work as its metrics say: reconciles of Deployments so
// far, and items ready in the queues or being reconciled by any of its controllers.
type queueState struct {
	reconciles    float64
	ready, active float64
}

func expiryQueue(m metrics) (queueState, error) {
	var q queueState
	var okR, okD, okA bool
	q.reconciles, okR = m.sum(metricReconciles, controllerIs(deploymentController))
	q.ready, okD = m.sum(metricDepth, controllerHasPrefix(expiryPrefix))
	q.active, okA = m.sum(metricActive, controllerHasPrefix(expiryPrefix))
	if !okR || !okD || !okA {
		return q, fmt.Errorf("no %s{controller=%q}, %s or %s{controller=~\"%s.*\"} in Kustos's metrics (yet)",
			metricReconciles, deploymentController, metricDepth, metricActive, expiryPrefix)
	}
	return q, nil
}

// passDone: the initial pass is over when, at two consecutive reads, at least n Deployments were
// reconciled, no more since, and nothing of the expiry detector is queued or being reconciled.
// Every Deployment is queued by the initial list before the workers start (controller-runtime
// waits for its caches), so an empty queue after n reconciles means each was looked at; two
// reads close the short gap between taking an item from the queue and counting it as active.
func passDone(prev, cur queueState, n int) bool {
	idle := func(q queueState) bool { return q.ready == 0 && q.active == 0 }
	return cur.reconciles >= float64(n) && cur.reconciles == prev.reconciles && idle(prev) && idle(cur)
}

// scraper reads Kustos's /metrics.
type scraper struct {
	url    string
	client *http.Client
}

func newScraper(addr string) scraper {
	return scraper{url: "http://" + addr + "/metrics", client: &http.Client{Timeout: 5 * time.Second}}
}

func (s scraper) scrape(ctx context.Context) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", s.url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// freeAddr returns a local address nothing listens on right now, for Kustos's metrics.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
