package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// extensionPeriods are the extensions a warning offers in the run: short, so that an extended
// preview still falls due before the settle period.
var extensionPeriods = []string{"20s", "40s"}

// frontDoor is the extension server's public address, as an Ingress would be: it forwards each
// request to the first replica that takes the connection (every replica serves the links).
type frontDoor struct {
	srv *http.Server
	ln  net.Listener
}

func newFrontDoor(backends []string) (*frontDoor, error) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: 2 * time.Second}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: "http", Host: "replicas"}) },
		Transport: &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var errs []error
			for _, b := range backends {
				c, err := d.DialContext(ctx, network, b)
				if err == nil {
					return c, nil
				}
				errs = append(errs, err)
			}
			return nil, errors.Join(errs...)
		}},
	}
	f := &frontDoor{srv: &http.Server{Handler: rp, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

func (f *frontDoor) url() string { return "http://" + f.ln.Addr().String() }

func (f *frontDoor) close() { _ = f.srv.Close() }

// browser is the owner's browser: GET a link (the page says what it would do), then POST its
// form.
type browser struct{ hc *http.Client }

func (b browser) do(ctx context.Context, method, link string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	u, err := url.Parse(link)
	if err != nil {
		return 0, "", err
	}
	var req *http.Request
	if method == http.MethodGet {
		req, err = http.NewRequestWithContext(ctx, method, link, http.NoBody)
	} else {
		// The page's form: the link's key, period and token, posted to /extend.
		form := url.Values{}
		for _, k := range []string{"key", "period", "token"} {
			form.Set(k, u.Query().Get(k))
		}
		post := *u
		post.RawQuery = ""
		req, err = http.NewRequestWithContext(ctx, method, post.String(), strings.NewReader(form.Encode()))
		if req != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	}
	if err != nil {
		return 0, "", err
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body), err
}

// retrying is do again while the answer says to come back (a rate limit, an API server that
// did not answer, a GET that found no replica): up to four times, a second or more apart.
func (b browser) retrying(ctx context.Context, method, link string) (int, string, error) {
	for i := 0; ; i++ {
		code, body, err := b.do(ctx, method, link)
		// A POST that may have gone through (no answer, or the front door's 502) is not sent
		// again: its second answer would be the replay's.
		again := code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable ||
			method == http.MethodGet && (err != nil || code == http.StatusBadGateway)
		if !again || i == 3 || !sleep(ctx, time.Duration(1+i)*time.Second) {
			return code, body, err
		}
	}
}

var newDeadlineRE = regexp.MustCompile(`now expires at <strong>([0-9TZ:+-]+)</strong>`)

// extendedUntil is the new deadline the page of a successful POST names.
func extendedUntil(body string) (time.Time, error) {
	m := newDeadlineRE.FindStringSubmatch(body)
	if m == nil {
		return time.Time{}, errors.New("the page names no new deadline")
	}
	return time.Parse(time.RFC3339, m[1])
}

// linkPeriod is the period a link offers.
func linkPeriod(link string) (time.Duration, error) {
	u, err := url.Parse(link)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(u.Query().Get("period"))
	if err != nil {
		return 0, fmt.Errorf("period of an extension link: %w", err)
	}
	return d, nil
}
