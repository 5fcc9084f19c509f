package helmrelease

import (
	"context"
	"io"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// restClientGetter is one call's discovery and RESTMapper, built from a *rest.Config (a controller
// has no kubeconfig file) and bound to one namespace. It lives for one call: discovery is cached
// in memory for that call only, so a CRD installed since the last call is always seen. (The tests
// complete it into the genericclioptions.RESTClientGetter that helm's action package, which they
// install releases with, needs.)
type restClientGetter struct {
	config    *rest.Config
	namespace string

	once      sync.Once
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
	err       error
}

func newRESTClientGetter(config *rest.Config, namespace string) *restClientGetter {
	return &restClientGetter{config: config, namespace: namespace}
}

func (g *restClientGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	g.init()
	return g.discovery, g.err
}

func (g *restClientGetter) ToRESTMapper() (meta.RESTMapper, error) {
	g.init()
	return g.mapper, g.err
}

// init builds discovery and the RESTMapper once: a call asks for them several times, and each
// fresh discovery client would query the API server again.
func (g *restClientGetter) init() {
	g.once.Do(func() {
		config := rest.CopyConfig(g.config)
		// Discovery of a cluster with many API groups is a burst of requests; the client-go
		// default (burst 10) would throttle it needlessly. kubectl uses the same value.
		config.Burst = 300
		dc, err := discovery.NewDiscoveryClientForConfig(config)
		if err != nil {
			g.err = err
			return
		}
		g.discovery = memory.NewMemCacheClient(dc)
		g.mapper = restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(g.discovery), g.discovery, nil)
	})
}

// withContext returns a copy of config whose every request ends when ctx does. Helm's uninstall,
// its value lookup and its Secrets storage driver use context.Background() internally, so the
// transport is the only place where a caller's deadline or cancellation can reach them.
func withContext(ctx context.Context, config *rest.Config) *rest.Config {
	c := rest.CopyConfig(config)
	c.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return &contextTransport{ctx: ctx, next: next}
	})
	return c
}

// contextTransport cancels a request, and the reading of its response body, when ctx ends, on
// top of whatever context the request already carries (a hook's watch has its own).
type contextTransport struct {
	ctx  context.Context
	next http.RoundTripper
}

func (t *contextTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// t.ctx, not only the request's, is the point: it is the caller's, which helm does not pass on.
	if err := context.Cause(t.ctx); err != nil { //nolint:contextcheck // see above
		return nil, err
	}
	rctx, cancel := context.WithCancelCause(req.Context())
	stop := context.AfterFunc(t.ctx, func() { cancel(context.Cause(t.ctx)) }) //nolint:contextcheck // see above
	release := func() {
		stop()
		cancel(nil)
	}
	resp, err := t.next.RoundTrip(req.WithContext(rctx))
	if err != nil {
		release()
		return nil, err
	}
	// The request's context must live until the body is read: a watch streams for minutes.
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// releasingBody releases the request's context when the body is closed.
type releasingBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
