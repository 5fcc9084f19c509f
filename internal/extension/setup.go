package extension

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/keyring"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/notify"
	"github.com/kustos-dev/kustos/internal/state"
)

// Channels are the owners' channels the expiry and inactivity detectors share, read-only: the
// webhook and mail (batched) of chain, and the links of the extension server, built once before
// either detector is set up, so that one owner's notices of both detectors share a batch and
// carry the same links whichever is set up first.
type Channels struct {
	// Notifier sends to all of them (nil: none configured), every notice naming an owner with a
	// new link to the owner's page when the server serves it.
	Notifier Notifier
	// Mail is the unbatched mail notifier (nil: no mail): the orphan digest uses it, and owners
	// then need an address.
	Mail *notify.Mail
	// Server serves the links (nil: no --extension-addr).
	Server *Server
	// NoticeLinks mints the extension links of an expiry warning (nil: the server serves none).
	NoticeLinks func(key lifecycle.Key, deadline, expires time.Time) ([]lifecycle.NoticeLink, error)
	// KeepLinks mints an inactivity alert's keep links (nil: the server serves none).
	KeepLinks inactivity.KeepLinks
	// ResumeLinks mints an inactivity pause notice's resume links (nil: the server serves
	// none).
	ResumeLinks inactivity.ResumeLinks
	// ExpiryResumeLinks mints the resume links of an expiry pause's notice, one per extension
	// period (nil: the server serves none).
	ExpiryResumeLinks expiry.ResumeLinks
}

// Channels builds the owners' channels chain configures, with the server the flags describe
// for d (AddServer); a mail batcher is added to mgr, which sends the batches still gathering
// when it stops.
func (e Options) Channels(ctx context.Context, mgr ctrl.Manager, chain notify.ChainConfig, d Detectors) (Channels, error) {
	var out Channels
	c, err := notify.NewChain(chain)
	if err != nil {
		return out, err
	}
	if c.Batcher != nil {
		if err := mgr.Add(c.Batcher); err != nil {
			return out, err
		}
	}
	out.Notifier, out.Mail = c.Notifier, c.Mail
	if out.Server, err = e.AddServer(ctx, mgr, d); err != nil || out.Server == nil {
		return out, err
	}
	if d.Expiry {
		out.NoticeLinks = out.Server.NoticeLinks
	}
	if out.Server.Keep != nil {
		out.KeepLinks = out.Server.KeepLinks
	}
	if out.Server.Resume != nil {
		out.ResumeLinks = out.Server.ResumeLinks
		if d.Expiry {
			out.ExpiryResumeLinks = out.Server.ResumeLinks
		}
	}
	if out.Server.Owners != nil && out.Notifier != nil {
		// Every notice about an owner's environment (expiry's and inactivity's) carries a new
		// link to the owner's page.
		out.Notifier = OwnerPages{Server: out.Server, Next: out.Notifier}
	}
	return out, nil
}

// Detectors are the detectors whose links the server answers, and what it needs beyond the
// flags to serve them on a manager.
type Detectors struct {
	// Expiry: the expiry detector runs; its extension links and the owner's page are served
	// (the page also with Inactivity alone).
	// WriteBack: the mode carries Changes out (not observer mode): an extension is written back
	// where the environment is declared (without the expiry detector nothing writes it back),
	// and an inactivity pause can be resumed (observer mode pauses nothing).
	Expiry, WriteBack bool
	// Inactivity, when set, are the inactivity detector's options: its alerts' keep links are
	// served (NewKeeper), each keep an OwnerKept Event by Reporter, and with WriteBack its pause
	// notices' resume links, each resume an OwnerResumed Event (and each extension an
	// OwnerExtended Event).
	Inactivity *inactivity.Options
	Reporter   EventReporter
	// Live reads (and creates once) --extension-key-secret. StateNamespace holds the Leases;
	// Instance names this replica in them.
	Live                     client.Client
	StateNamespace, Instance string
	Now                      func() time.Time
	Log                      logr.Logger
}

// AddServer builds the server the flags describe for d and has mgr serve it on every replica
// (a link may reach any of them); nil without --extension-addr.
func (e Options) AddServer(ctx context.Context, mgr ctrl.Manager, d Detectors) (*Server, error) {
	if e.Addr == "" {
		return nil, nil
	}
	key, flag, err := keyring.ReadFlags(ctx, d.Live, "extension-key", e.KeyFile, e.KeySecret)
	if err != nil {
		return nil, err
	}
	// The API server, not the cache: a link used on another replica a moment ago must be seen,
	// and an owner's page lists their Leases by label selector without a cache of every Lease.
	store := &state.Store{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Namespace: d.StateNamespace, Identity: state.NewIdentity(d.Instance)}
	srv, err := e.NewServer(key, flag, store, d.Expiry && d.WriteBack, d.Now, d.Log)
	if err != nil {
		return nil, err
	}
	if d.Expiry {
		srv.Reporter, srv.Mapper = d.Reporter, mgr.GetRESTMapper() // an extension is an OwnerExtended Event
	}
	if !d.Expiry && d.Inactivity == nil {
		srv.Owners = nil // the owner's page lists the expiry detector's deadlines and the inactivity detector's targets
	}
	if d.Inactivity != nil {
		if srv.Keep, err = NewKeeper(*d.Inactivity, mgr.GetRESTMapper()); err != nil {
			return nil, err
		}
		if srv.Keep != nil {
			srv.Keep.Reporter = d.Reporter
		}
	}
	if (d.Inactivity != nil || d.Expiry) && d.WriteBack {
		// Both detectors' pauses can be resumed (observer mode pauses nothing).
		srv.Resume = &Resumer{Reporter: d.Reporter, Mapper: mgr.GetRESTMapper()}
	}
	if err := mgr.Add(&Listener{Addr: e.Addr, Handler: srv, Log: d.Log}); err != nil {
		return nil, err
	}
	return srv, nil
}
