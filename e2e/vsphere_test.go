package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	detectvsphere "github.com/kustos-dev/kustos/internal/detect/vsphere"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/notify"
	"github.com/kustos-dev/kustos/internal/orphans"
	"github.com/kustos-dev/kustos/internal/state"
	"github.com/kustos-dev/kustos/internal/vsphere"
	"github.com/kustos-dev/kustos/internal/vsphere/vspheretest"
)

// vsphereOptions run Kustos against the simulator sim: VMs of folder labs, quarantined into
// labs/quarantine, crawled every second, expiry's short test times.
func vsphereOptions(sim *vspheretest.Sim, mode app.Mode, allowQuarantine bool) func(*app.Options) {
	return func(o *app.Options) {
		o.Mode = mode
		expiryOptions(o)
		o.VSphere = detectvsphere.Options{Enabled: true, CrawlInterval: time.Second, Config: vsphere.Config{
			URL: sim.URL, CredentialsFile: sim.CredentialsFile, CAFile: sim.CAFile(), Datacenter: vspheretest.Datacenter,
			Folders: []string{"labs"}, QuarantineFolder: "labs/quarantine", Ignore: []string{"golden"}}}
		o.Allow = allow.Policy{}
		if allowQuarantine {
			o.Allow = allow.Policy{{Detector: expiry.DetectorName, Verb: allow.VerbDelete, Resource: schema.GroupResource{Group: detectvsphere.Group, Resource: "virtualmachines"}}: true}
		}
	}
}

// vmLease is the state Lease of a VM (nil while there is none).
func vmLease(t *testing.T, ns, uuid string) *coordinationv1.Lease {
	t.Helper()
	var l coordinationv1.Lease
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: state.LeaseName(lifecycle.KeyFor(expiry.DetectorName, detectvsphere.Target(uuid)))}, &l)
	if err != nil {
		return nil
	}
	return &l
}

// vmEvents are Kustos's Events about a VM with reason: cluster-scoped targets' Events are in
// "default".
func vmEvents(t *testing.T, uuid, reason string) []corev1.Event {
	t.Helper()
	var out []corev1.Event
	for _, e := range kustosEvents(t, metav1Default, reason) {
		if e.InvolvedObject.Name == uuid && e.InvolvedObject.Kind == detectvsphere.Kind {
			out = append(out, e)
		}
	}
	return out
}

const metav1Default = "default"

// TestVSphereDirect: VMs with an owner and a lifetime in their notes are warned (the notice and
// the Event name the VM, not its UUID), then quarantined — powered off, renamed, moved, never
// destroyed — and the owner is told; a VM without notes is an orphan in `kustos status
// --orphans` and gets no Lease; an ignored one is neither; a snapshot rollback that clears the
// notes keeps the lifetime; a power-off that fails leaves the VM as it was and is retried; an
// extension through the owner's link keeps a VM past its old deadline.
func TestVSphereDirect(t *testing.T) {
	sim := vspheretest.Start(t)
	sink := startNoticeSink(t)
	ext := extensionServer(t)
	sim.Folder("labs/quarantine")
	short, shortID := sim.VM("labs", "ana-dev", "Ana's dev box\nEC_OWNER=ana@example.com\nEC_TTL=6s")
	_, orphanID := sim.VM("labs/team-b", "nobody", "")
	_, typoID := sim.VM("labs/team-b", "typo", "EC_OWNER=eve@example.com\nEC_TTL=soon")
	sim.VM("labs", "golden", "")
	rollback, rollbackID := sim.VM("labs", "bob-test", "")
	sim.Snapshot(rollback, "clean") // taken before the notes: reverting to it clears them
	sim.SetNotes(rollback, "EC_OWNER=bob@example.com\nkustos.io/ttl=8s")
	busy, _ := sim.VM("labs", "busy", "EC_OWNER=cy@example.com\nEC_TTL=6s")
	restore := sim.FailPowerOff("busy")
	extended, extendedID := sim.VM("labs", "kept-longer", "EC_OWNER=dee@example.com\nEC_TTL=6s")
	k := startKustos(t, func(o *app.Options) {
		vsphereOptions(sim, app.ModeDirect, true)(o)
		o.Expiry.Webhook = notify.WebhookOptions{URL: sink.url}
		o.Expiry.Extension = ext.options([]string{"1m"})
	})
	dumpOnFailure(t, k)
	stateNS := k.opts.StateNamespace

	// The rollback: the lifetime is kept on first sight; the notes cleared by the revert do not
	// clear it, nor make the VM an orphan.
	eventually(t, "bob-test's lifetime kept in its Lease", func() bool {
		l := vmLease(t, stateNS, rollbackID)
		return l != nil && l.Annotations[state.BagPrefix+"kept-owner"] == "bob@example.com" && l.Annotations[state.BagPrefix+"kept-ttl"] == "8s"
	})
	sim.Revert(rollback, "clean")
	if _, _, _, notes := sim.Props(rollback); notes != "" {
		t.Fatalf("the revert left the notes %q", notes)
	}

	// The owner of the extended VM uses the link in the warning.
	var warning lifecycle.Notice
	eventually(t, "kept-longer's warning at the webhook", func() bool {
		for _, n := range sink.notices(expiry.NoticeWarning) {
			if n.Target.Name == extendedID {
				warning = n
				return true
			}
		}
		return false
	})
	if len(warning.Links) != 1 || !strings.Contains(warning.Subject, `VM "kept-longer"`) || !strings.Contains(warning.Text, "/DC0/vm/labs") ||
		strings.Contains(warning.Text, extendedID) || !strings.Contains(warning.Text, "quarantined") {
		t.Fatalf("warning notice: %+v", warning)
	}
	u, _ := url.Parse(warning.Links[0].URL)
	resp, err := http.PostForm("http://"+ext.addr+"/extend", u.Query())
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("extending kept-longer: %v %v", resp, err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The page names the VM as its owner knows it, and promises no write-back: Kustos keeps a
	// VM's lifetime itself.
	if !strings.Contains(string(page), `VM &#34;kept-longer&#34;`) || strings.Contains(string(page), extendedID) || strings.Contains(string(page), "kustos.io/expires-at") {
		t.Errorf("the extension's page: %s", page)
	}

	// ana-dev: warned, then quarantined, then her owner told.
	eventually(t, "ana-dev quarantined", func() bool {
		name, folder, power, _ := sim.Props(short)
		return strings.HasPrefix(name, "ana-dev-expired-") && folder == "/DC0/vm/labs/quarantine" && power == "poweredOff"
	})
	eventually(t, "ana-dev's owner told", func() bool {
		for _, n := range sink.notices(expiry.NoticeDone) {
			if n.Target.Name == shortID && strings.Contains(n.Text, "was quarantined") && strings.Contains(n.Subject, `VM "ana-dev"`) {
				return true
			}
		}
		return false
	})
	warn := vmEvents(t, shortID, expiry.ReasonExpiryWarning)
	if len(warn) != 1 || !strings.Contains(warn[0].Message, `VM "ana-dev"`) || warn[0].InvolvedObject.APIVersion != "vsphere.kustos.io/v1" {
		t.Errorf("ana-dev's warning Events in default: %v", messages(warn))
	}

	// busy: due as well, but its power-off fails: nothing renamed or moved, tried again.
	eventually(t, "busy's power-off failing", func() bool {
		return counterValue(t, metrics.VSphereActionErrors.WithLabelValues(string(vsphere.StepPowerOff))) >= 2
	})
	if name, folder, power, _ := sim.Props(busy); name != "busy" || folder != "/DC0/vm/labs" || power != "poweredOn" {
		t.Errorf("busy after a failed power-off: %s in %s, %s", name, folder, power)
	}
	restore()
	eventually(t, "busy quarantined once vSphere lets it", func() bool {
		name, folder, power, _ := sim.Props(busy)
		return strings.HasPrefix(name, "busy-expired-") && folder == "/DC0/vm/labs/quarantine" && power == "poweredOff"
	})

	// The orphan is reported, the ignored VM and the rolled-back one are not; no Lease for the orphan.
	rows, err := orphans.VMs(context.Background(), k8s, stateNS, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || !strings.Contains(rows[0].Target, `VM "nobody"`) || strings.Join(rows[0].Missing, ",") != "owner,lifetime" ||
		!strings.Contains(rows[1].Target, `VM "typo"`) || !strings.Contains(rows[1].Problem, `EC_TTL="soon" on the notes of VM "typo", line 2`) {
		t.Errorf("VM orphans = %+v, want nobody (no notes) and typo (an unusable lifetime)", rows)
	}
	if bad := vmEvents(t, typoID, expiry.ReasonInvalidExpiry); len(bad) != 1 || !strings.Contains(bad[0].Message, "line 2") {
		t.Errorf("typo's InvalidExpiryMetadata Events: %v", messages(bad))
	}
	if v := gaugeValue(t, metrics.ExpiryOrphans.WithLabelValues("VirtualMachine.vsphere.kustos.io")); v != 2 {
		t.Errorf("kustos_expiry_orphans{kind=VirtualMachine.vsphere.kustos.io} = %v, want 2", v)
	}
	if vmLease(t, stateNS, orphanID) != nil {
		t.Error("the orphan has a Lease")
	}
	// bob-test's notes are empty since the rollback; its kept lifetime expired all the same.
	eventually(t, "bob-test quarantined by its kept lifetime", func() bool {
		name, folder, power, _ := sim.Props(rollback)
		return strings.HasPrefix(name, "bob-test-expired-") && folder == "/DC0/vm/labs/quarantine" && power == "poweredOff"
	})
	if w := vmEvents(t, rollbackID, expiry.ReasonExpiryWarning); len(w) != 1 || !strings.Contains(w[0].Message, "kept by Kustos since") {
		t.Errorf("bob-test's warning: %v", messages(w))
	}
	// kept-longer: its old deadline and the interval passed long ago; it stays.
	if name, _, power, _ := sim.Props(extended); name != "kept-longer" || power != "poweredOn" {
		t.Errorf("the extended VM was quarantined: %s, %s", name, power)
	}
}

// TestVSphereObserverAndOptIn: observer mode reports a due VM (ExpiryDue) and changes nothing;
// direct mode without --allow-delete=expiry:vsphere.kustos.io/virtualmachines refuses the
// quarantine (DeleteNotAllowed) and the VM stays.
func TestVSphereObserverAndOptIn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   app.Mode
		reason string
	}{
		{"observer", app.ModeObserve, expiry.ReasonExpiryDue},
		{"direct without the opt-in", app.ModeDirect, "DeleteNotAllowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := vspheretest.Start(t)
			sim.Folder("labs/quarantine")
			vm, id := sim.VM("labs", "ana-dev", "EC_OWNER=ana@example.com\nEC_TTL=4s")
			k := startKustos(t, vsphereOptions(sim, tc.mode, false))
			dumpOnFailure(t, k)
			eventually(t, tc.reason+" about ana-dev", func() bool { return len(vmEvents(t, id, tc.reason)) > 0 })
			if name, folder, power, _ := sim.Props(vm); name != "ana-dev" || folder != "/DC0/vm/labs" || power != "poweredOn" {
				t.Errorf("ana-dev changed: %s in %s, %s", name, folder, power)
			}
		})
	}
}

// TestVSpherePRMode: in PR mode a due VM is quarantined as in direct mode — VMs are not in Git,
// so no pull request is opened for it — and its extension is not written back anywhere.
func TestVSpherePRMode(t *testing.T) {
	g := newGitOps(t, newNamespace(t, "vsphere-pr", nil))
	sim := vspheretest.Start(t)
	sim.Folder("labs/quarantine")
	vm, _ := sim.VM("labs", "ana-dev", "EC_OWNER=ana@example.com\nEC_TTL=4s")
	k := startKustos(t, g.prMode(func(o *app.Options) {
		vsphereOptions(sim, app.ModePR, true)(o)
	}))
	dumpOnFailure(t, k)
	eventually(t, "ana-dev quarantined", func() bool {
		name, folder, power, _ := sim.Props(vm)
		return strings.HasPrefix(name, "ana-dev-expired-") && folder == "/DC0/vm/labs/quarantine" && power == "poweredOff"
	})
	if prs := g.prs(); len(prs) != 0 {
		t.Errorf("%d pull requests for a VM: %+v", len(prs), prs)
	}
}

func gaugeValue(t *testing.T, g interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func counterValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestVSphereOrphansFollow: the orphan list follows the crawls — an orphan given notes leaves
// it, a new orphan joins it (the list's Lease is read from the API server, not from the
// manager's cache, which holds only state Leases).
func TestVSphereOrphansFollow(t *testing.T) {
	sim := vspheretest.Start(t)
	sim.Folder("labs/quarantine")
	nobody, nobodyID := sim.VM("labs", "nobody", "")
	k := startKustos(t, vsphereOptions(sim, app.ModeObserve, false))
	dumpOnFailure(t, k)
	stateNS := k.opts.StateNamespace
	listed := func() []string {
		rows, err := orphans.VMs(context.Background(), k8s, stateNS, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			out = append(out, r.Target)
		}
		return out
	}
	want := func(names ...string) func() bool {
		return func() bool {
			got := listed()
			if len(got) != len(names) {
				return false
			}
			for i, n := range names {
				if !strings.Contains(got[i], `"`+n+`"`) {
					return false
				}
			}
			return true
		}
	}
	eventually(t, "nobody in the orphan list", want("nobody"))
	sim.SetNotes(nobody, "EC_OWNER=ana@example.com\nEC_TTL=1w")
	sim.VM("labs", "newcomer", "")
	eventually(t, "nobody left the orphan list, newcomer joined it", want("newcomer"))
	eventually(t, "nobody's lifetime kept", func() bool { return vmLease(t, stateNS, nobodyID) != nil })
}
