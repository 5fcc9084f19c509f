package activity

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Access is how the Prometheus server is reached: kustos run and kustos inactivity plan take
// the same three flags. A Prometheus behind an authenticating proxy (kube-rbac-proxy,
// OpenShift's thanos-querier, an ingress with OAuth) wants a bearer token, often the pod's
// own service account token; one serving TLS from a private CA wants that CA. Basic auth
// comes with the URL (https://user:password@host), as for Prometheus's own clients.
type Access struct {
	// URL is --prometheus-url.
	URL string
	// BearerTokenFile is --prometheus-bearer-token-file: its content goes as
	// "Authorization: Bearer …" with every query. It is read again for each request, as
	// Prometheus's own clients do: a projected service account token rotates under a running
	// process.
	BearerTokenFile string
	// CAFile is --prometheus-ca-file: PEM certificates that sign the server's, in place of the
	// system's. Read again when it changes (a cert-manager renewal).
	CAFile string
}

// Validate says what is wrong with the flags, before anything is asked. The token file must
// be readable and hold a token now (a typo in the path is found at start, not at the first
// check); its content never appears in an error.
func (a Access) Validate() error {
	if a.URL == "" {
		return errors.New("--prometheus-url is required: activity comes from Prometheus")
	}
	u, err := url.Parse(a.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--prometheus-url=%q: want an http or https URL", lifecycle.Clip(redact(a.URL), 80))
	}
	if a.CAFile != "" && u.Scheme != "https" {
		return fmt.Errorf("--prometheus-ca-file=%s: --prometheus-url is not https, so no certificate is checked", a.CAFile)
	}
	if a.BearerTokenFile != "" {
		if u.User != nil {
			return errors.New("--prometheus-bearer-token-file and a user in --prometheus-url: both set the Authorization header; give one")
		}
		b, err := os.ReadFile(a.BearerTokenFile)
		if err != nil {
			return fmt.Errorf("--prometheus-bearer-token-file: %w", err)
		}
		if strings.TrimSpace(string(b)) == "" {
			return fmt.Errorf("--prometheus-bearer-token-file=%s: the file is empty", a.BearerTokenFile)
		}
	}
	return nil
}

// NewAPI is the Prometheus query API for a. Redirects are not followed: the Authorization
// header would go with them, wherever they point.
func NewAPI(a Access) (v1.API, error) {
	client, err := HTTPClient(a)
	if err != nil {
		return nil, err
	}
	c, err := promapi.NewClient(promapi.Config{Address: a.URL, Client: client})
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url: %w", err)
	}
	return v1.NewAPI(wholeAnswers{c}), nil
}

// HTTPClient is the HTTP client NewAPI asks a's Prometheus with (token, CA, no redirects), for a
// reader that streams an answer too large to hold whole (internal/quotahistory); such a reader
// asks for partial_response=false itself.
func HTTPClient(a Access) (*http.Client, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	hc := config.HTTPClientConfig{
		TLSConfig:       config.TLSConfig{CAFile: a.CAFile},
		FollowRedirects: false,
		EnableHTTP2:     true,
	}
	if a.BearerTokenFile != "" {
		hc.Authorization = &config.Authorization{Type: "Bearer", CredentialsFile: a.BearerTokenFile}
	}
	if err := hc.Validate(); err != nil {
		return nil, fmt.Errorf("--prometheus-*: %w", err)
	}
	// Prometheus's own HTTP client configuration: the same round trippers its remote read and
	// promtool use, reading the token per request and reloading the CA file when it changes.
	client, err := config.NewClientFromConfig(hc, "kustos-activity")
	if err != nil {
		if a.CAFile != "" {
			return nil, fmt.Errorf("--prometheus-ca-file=%s: %w", a.CAFile, err)
		}
		return nil, fmt.Errorf("--prometheus-url: %w", err)
	}
	return client, nil
}

// wholeAnswers asks for whole answers only: partial_response=false on every request. Thanos's
// querier (thanos-querier) otherwise answers 200 with the series of the stores that answered
// and a warning, and targets whose series sat on a store that was down would look idle; with
// it, Thanos refuses the query instead (an error: nothing declared inactive). Prometheus
// ignores the parameter (tested against the real one). The check also treats any warning as a
// partial answer, for queriers that do not know the parameter.
type wholeAnswers struct{ promapi.Client }

var _ promapi.Client = wholeAnswers{}

// partialResponseParam is Thanos's query parameter for partial answers.
const partialResponseParam = "partial_response"

// URL is the endpoint's URL with partial_response=false. client_golang's query and range query
// start their parameters from this URL's query, so it goes in the POST form and, when a server
// answers POST with 405, in the GET fallback's URL too.
func (c wholeAnswers) URL(ep string, args map[string]string) *url.URL {
	u := c.Client.URL(ep, args)
	q := u.Query()
	q.Set(partialResponseParam, "false")
	u.RawQuery = q.Encode()
	return u
}
