package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/extension"
)

// TestNotifiersCarryOwnerPagesForEveryDetector: the owners' channels are built once, before any
// detector is set up, and with the extension server on every notice they carry (the expiry and
// the inactivity detector's alike, whichever is set up first) gets the owner's page link. The
// server and the page run for the inactivity detector alone too: the page lists its targets, and
// its alerts' keep links need nothing of the expiry detector.
func TestNotifiersCarryOwnerPagesForEveryDetector(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		expiry     bool
		ownerPages bool
		keepLinks  bool
	}{
		{"expiry and inactivity", true, true, true},
		{"inactivity alone", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Nothing is started: the manager only collects the runnables.
			mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
				Metrics: metricsserver.Options{BindAddress: "0"}, Logger: logr.Discard()})
			if err != nil {
				t.Fatal(err)
			}
			o := validOptions()
			o.Now, o.Log = time.Now, logr.Discard()
			o.Expiry.Enabled, o.Inactivity = tc.expiry, inactivity.DefaultOptions()
			o.Inactivity.Enabled = true
			o.Expiry.Webhook.URL = "https://hooks.example.com/kustos"
			o.Expiry.Extension = extension.Options{Addr: "127.0.0.1:0", URL: "https://kustos.example.com", KeyFile: key,
				Periods: []string{"1d"}, Max: 30 * 24 * time.Hour}
			nt, err := buildNotifiers(t.Context(), mgr, o, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, pages := nt.Notifier.(extension.OwnerPages)
			if pages != tc.ownerPages {
				t.Errorf("notifier %T; want owner pages %v", nt.Notifier, tc.ownerPages)
			}
			if (nt.KeepLinks != nil) != tc.keepLinks || nt.Server == nil {
				t.Errorf("keep links %v, extension server %v; want keep links %v and the server", nt.KeepLinks != nil, nt.Server != nil, tc.keepLinks)
			}
		})
	}
}
