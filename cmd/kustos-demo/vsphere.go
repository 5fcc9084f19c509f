package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/vsphere/vspheretest"
)

const (
	vmStateNS         = "kustos-vsphere-system"
	vmTTL             = 20 * time.Second
	vmFolder          = "labs"
	vmQuarantine      = "labs/quarantine"
	vmCrawl           = 2 * time.Second
	vmKept, vmExpired = "ana-lab", "bo-lab"
	vmOrphan          = "build-agent-7"
)

// vsphereAct is the demo's vSphere act: govmomi's vSphere simulator (vcsim) in this process with
// three lab VMs, two with an owner and a 20 s lifetime in their notes (EC_OWNER, EC_TTL, as
// env-cleaner's users write them) and one without. Kustos crawls them; both owners are warned with
// extension links; ana uses hers; bo's VM is quarantined at its deadline — powered off, renamed,
// moved into the quarantine folder, never destroyed; the VM without notes is an orphan in
// `kustos status --orphans`. VMs are not in Git: no pull request, whatever the mode.
func vsphereAct(ctx context.Context, a *act, kustosBin, kubeconfig string, c client.Client) error {
	out, tb := a.out, &demoTB{}
	defer func() { _ = tb.finish() }()          // stops the simulator; a failure in it was already the act's (Fatalf)
	a.watch(metav1.NamespaceDefault, vmStateNS) // Events about VMs (cluster-scoped targets) are in default
	a.step("vSphere: a vCenter simulator (vcsim, govmomi's vSphere API in this process) with three lab VMs in folder " + vmFolder)
	// The simulator's helpers bound their own calls and stop with tb's cleanups.
	sim := vspheretest.Start(tb) //nolint:contextcheck // test tooling, as above
	sim.Folder(vmQuarantine)     //nolint:contextcheck // test tooling
	notes := func(owner string) string {
		return fmt.Sprintf("Lab VM of %s\nEC_OWNER=%s\nEC_TTL=%s", strings.Split(owner, "@")[0], owner, lifecycle.FormatDuration(vmTTL))
	}
	kept, keptID := sim.VM(vmFolder, vmKept, notes("ana@example.com"))         //nolint:contextcheck // test tooling
	expired, expiredID := sim.VM(vmFolder, vmExpired, notes("bo@example.com")) //nolint:contextcheck // test tooling
	sim.VM(vmFolder, vmOrphan, "")                                             //nolint:contextcheck // test tooling
	for _, vm := range []struct{ name, notes string }{{vmKept, notes("ana@example.com")}, {vmExpired, notes("bo@example.com")}, {vmOrphan, ""}} {
		shown := strings.ReplaceAll(vm.notes, "\n", " | ")
		if shown == "" {
			shown = "(no notes)"
		}
		fmt.Fprintf(out, "     /%s/vm/%s/%-14s notes: %s\n", vspheretest.Datacenter, vmFolder, vm.name, shown)
	}

	hook, err := startHook(ctx)
	if err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: vmStateNS}}); err != nil {
		return err
	}
	dir := tb.TempDir()
	keyFile, addr, err := extensionServer(dir, "demo-vsphere-extension-key-0123456789abcdef")
	if err != nil {
		return err
	}
	// This Kustos looks after the VMs only: --lifecycle-kinds names a kind no act creates, so the
	// previews the expiry act left in the cluster (no GitOps tool syncs its merges here) stay the
	// expiry act's. The quarantine is a removal, so it is opted in like every deletion.
	args := []string{"run", "--kubeconfig=" + kubeconfig, "--state-namespace=" + vmStateNS,
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--mode=direct", "--allow-delete=expiry:vsphere.kustos.io/virtualmachines",
		"--enable-cleaners=false", "--lifecycle-kinds=batch/v1/CronJob",
		"--expiry-warning-before=" + expiryWarnBefore.String(), "--notification-interval=" + expiryInterval.String(),
		"--enable-vsphere", "--vsphere-url=" + sim.URL, "--vsphere-credentials-file=" + sim.CredentialsFile,
		"--vsphere-ca-file=" + sim.CAFile(), "--vsphere-datacenter=" + vspheretest.Datacenter,
		"--vsphere-folders=" + vmFolder, "--vsphere-quarantine-folder=" + vmQuarantine, "--vsphere-crawl-interval=" + vmCrawl.String(),
		"--extension-addr=" + addr, "--extension-url=http://" + addr, "--extension-periods=1m,5m", "--extension-max=10m",
		"--extension-key-file=" + keyFile, "--notify-webhook-url=" + hook.url}
	a.step("starting kustos run --mode=direct --enable-vsphere --vsphere-folders=labs --vsphere-quarantine-folder=labs/quarantine --allow-delete=expiry:vsphere.kustos.io/virtualmachines …")
	start := time.Now()
	stop, err := a.startKustos("kustos (vsphere)", kustosBin, args)
	if err != nil {
		return err
	}
	defer stop()

	a.step("waiting for the owners' warnings (deadline − 15 s)")
	var warnings map[string]lifecycle.Notice
	if err := poll(ctx, func() (bool, error) {
		warnings = hook.byTarget(expiry.NoticeWarning)
		_, k := warnings[keptID]
		_, e := warnings[expiredID]
		return k && e, nil
	}); err != nil {
		return fmt.Errorf("no warnings for %s and %s at the webhook: %w", vmKept, vmExpired, err)
	}
	w := warnings[keptID]
	fmt.Fprintf(out, "     webhook received %q for %s, %s after Kustos started:\n", w.Subject, w.To, time.Since(start).Round(time.Second))
	fmt.Fprintf(out, "       %s\n", w.Text)
	for _, lk := range w.Links {
		fmt.Fprintf(out, "       [%s] %s\n", lk.Label, shortenToken(lk.URL))
	}
	if w.OwnerPage != nil {
		fmt.Fprintf(out, "       [%s] %s\n", w.OwnerPage.Label, shortenToken(w.OwnerPage.URL))
	}

	var link string
	for _, lk := range w.Links {
		if strings.HasSuffix(lk.Label, "5m") {
			link = lk.URL
		}
	}
	if link == "" {
		return fmt.Errorf("%s's warning has no 5m extension link: %+v", vmKept, w.Links)
	}
	a.step("ana presses the 5m button of her link (POST)")
	u, _ := url.Parse(link)
	code, body, err := httpDo(http.MethodPost, "http://"+addr+"/extend", u.Query())
	if err != nil {
		return fmt.Errorf("POST the link: %w", err)
	}
	if code != http.StatusOK {
		return fmt.Errorf("POST the link: %d %s", code, pageText(body))
	}
	fmt.Fprintf(out, "     POST → %d %s\n", code, pageText(body))
	if !strings.Contains(pageText(body), vmKept) {
		return fmt.Errorf("the extension's page does not name %s: %s", vmKept, pageText(body))
	}

	a.step(fmt.Sprintf("waiting for %s's deadline (%s after it was first seen, and the notification interval after its warning): the quarantine", vmExpired, vmTTL))
	var name, folder, power string
	if err := poll(ctx, func() (bool, error) { //nolint:contextcheck // test tooling
		name, folder, power, _ = sim.Props(expired)
		return strings.HasPrefix(name, vmExpired+"-expired-") && folder == "/"+vspheretest.Datacenter+"/vm/"+vmQuarantine && power == "poweredOff", nil
	}); err != nil {
		return fmt.Errorf("%s not quarantined (now %q in %s, %s): %w", vmExpired, name, folder, power, err)
	}
	fmt.Fprintf(out, "     %s is now %q in %s, %s (%s after Kustos started); it was not destroyed\n", vmExpired, name, folder, power, time.Since(start).Round(time.Second))
	var done lifecycle.Notice
	if err := poll(ctx, func() (bool, error) {
		var ok bool
		done, ok = hook.byTarget(expiry.NoticeDone)[expiredID]
		return ok, nil
	}); err != nil {
		return fmt.Errorf("bo was not told that %s was quarantined: %w", vmExpired, err)
	}
	fmt.Fprintf(out, "     webhook received %q for %s: %s\n", done.Subject, done.To, done.Text)

	// ana's VM had the same deadline: two crawls after bo's quarantine it still runs, as it is.
	a.step(fmt.Sprintf("%s, extended by its link, had the same deadline: two crawls later it still runs", vmKept))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(2 * vmCrawl):
	}
	name, folder, power, _ = sim.Props(kept) //nolint:contextcheck // test tooling
	if name != vmKept || power != "poweredOn" {
		return fmt.Errorf("%s was extended but is %q in %s, %s", vmKept, name, folder, power)
	}
	fmt.Fprintf(out, "     %s: %s, untouched\n", vmKept, "poweredOn")

	a.step("kustos status --orphans: what Kustos leaves alone")
	var report string
	if err := poll(ctx, func() (bool, error) {
		cmd := exec.CommandContext(ctx, kustosBin, "status", "--orphans", "--kubeconfig="+kubeconfig, "--state-namespace="+vmStateNS, "--lifecycle-kinds=batch/v1/CronJob")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return false, fmt.Errorf("kustos status --orphans: %w: %s", err, strings.TrimSpace(stderr.String()))
		}
		report = stdout.String()
		return strings.Contains(report, vmOrphan), nil
	}); err != nil {
		return fmt.Errorf("%s, without notes, is not among the orphans: %w (last output: %s)", vmOrphan, err, report)
	}
	// The Namespaces without an owner are listed too (every cluster has a few); the VMs here.
	var rows []string
	for i, line := range strings.Split(strings.TrimSpace(report), "\n") {
		if i == 0 || strings.HasPrefix(line, "VM ") {
			rows = append(rows, line)
		}
	}
	fmt.Fprint(out, indent(strings.Join(rows, "\n")+"\n", "     | "))
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Summary (vsphere): Kustos crawled the lab folder of a vCenter (the simulator) every %s; both owners were warned with one-time links before anything happened; ana extended %s and it kept running; %s was quarantined at its deadline — powered off, renamed, moved into %s, never destroyed — and bo was told; %s, without an owner or a lifetime in its notes, is only reported. The lifetimes live in Kustos's Leases from the first crawl on, so a snapshot rollback that clears or shortens the notes changes nothing. VMs are not in Git: no pull request.\n",
		vmCrawl, vmKept, vmExpired, vmQuarantine, vmOrphan)
	return nil
}
