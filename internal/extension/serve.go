package extension

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// Listener serves Handler on Addr on every replica (a link may reach any of them) until the
// manager stops.
type Listener struct {
	Addr    string
	Handler http.Handler
	Log     logr.Logger
}

var _ manager.LeaderElectionRunnable = (*Listener)(nil)

// NeedLeaderElection is false: every replica serves.
func (l *Listener) NeedLeaderElection() bool { return false }

// Start serves until ctx ends, then gives requests in flight a few seconds.
func (l *Listener) Start(ctx context.Context) error {
	srv := &http.Server{Addr: l.Addr, Handler: l.Handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	l.Log.Info("serving extension links", "addr", l.Addr)
	select {
	case <-ctx.Done():
		// ctx is done; the shutdown gets its own few seconds for requests in flight.
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	case err := <-errc:
		return fmt.Errorf("extension server on %s: %w", l.Addr, err)
	}
}

// NoticeLinks mints a warning's extension links, as a notice carries them: the expiry
// detector's Links.
func (s *Server) NoticeLinks(k lifecycle.Key, deadline, expires time.Time) ([]lifecycle.NoticeLink, error) {
	ls, err := s.Links(k, deadline, expires)
	out := make([]lifecycle.NoticeLink, 0, len(ls))
	for _, l := range ls {
		out = append(out, lifecycle.NoticeLink{Label: "Extend by " + l.Period, URL: l.URL})
	}
	return out, err
}

// Recorded is the expiry detector's LeaseTrigger: an expiry Key's Lease now records a different
// extension (the server wrote it, on this replica or another), so the detector looks again at
// once to write the new deadline back, instead of at its next scheduled look.
func Recorded(before, after client.Object) (lifecycle.Key, bool) {
	annotation := state.BagPrefix + expiry.BagExtendedUntil
	key := after.GetAnnotations()[state.AnnotationKey]
	if !strings.HasPrefix(key, expiry.DetectorName+"/") || before.GetAnnotations()[annotation] == after.GetAnnotations()[annotation] {
		return "", false
	}
	return lifecycle.Key(key), true
}
