package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Prometheus's query endpoints: what a check cycle may call.
const (
	pathQuery      = "/api/v1/query"
	pathQueryRange = "/api/v1/query_range"
)

// request is one HTTP request Kustos made to Prometheus through the proxy.
type request struct {
	path   string
	source string // the default source whose metric the query reads ("" none, "?" several)
	start  time.Time
	end    time.Time // when the answer was written back to Kustos
	status int
}

// isQuery: a request to one of the query endpoints.
func (r request) isQuery() bool { return r.path == pathQuery || r.path == pathQueryRange }

// countingProxy is a reverse proxy on loopback between Kustos and Prometheus that records every
// request: its path, the source its query belongs to and when it came and was answered.
type countingProxy struct {
	URL string

	srv *http.Server
	mu  sync.Mutex
	log []request
}

func startProxy(ctx context.Context, prometheusURL string) (*countingProxy, error) {
	target, err := url.Parse(prometheusURL)
	if err != nil {
		return nil, err
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &countingProxy{URL: "http://" + l.Addr().String()}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }}
	p.srv = &http.Server{Handler: p.handler(rp), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

func (p *countingProxy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := request{path: r.URL.Path, start: time.Now()}
		// The query is in the URL (GET) or the form body (POST, client_golang's first try).
		query := r.URL.Query().Get("query")
		if r.Body != nil && r.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			_ = r.Body.Close()
			if err == nil {
				if form, err := url.ParseQuery(string(body)); err == nil && form.Get("query") != "" {
					query = form.Get("query")
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		rec.source = sourceOf(query)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		rec.end, rec.status = time.Now(), sw.status
		p.mu.Lock()
		p.log = append(p.log, rec)
		p.mu.Unlock()
	})
}

// requests returns what the proxy recorded so far, in the order the answers went out.
func (p *countingProxy) requests() []request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]request(nil), p.log...)
}

func (p *countingProxy) close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// sourceOf names the default source whose metric query reads: "" none, "?" more than one.
func sourceOf(query string) string {
	found := ""
	for _, m := range sourceMarkers {
		if strings.Contains(query, m.metric) {
			if found != "" {
				return "?"
			}
			found = m.source
		}
	}
	return found
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Flush lets the reverse proxy flush streamed answers.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
