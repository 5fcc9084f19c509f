package vsphere_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/vsphere"
	"github.com/kustos-dev/kustos/internal/vsphere/vspheretest"
)

func client(t *testing.T, sim *vspheretest.Sim, mod func(*vsphere.Config)) *vsphere.Client {
	t.Helper()
	cfg := vsphere.Config{URL: sim.URL, CAFile: sim.CAFile(), Datacenter: vspheretest.Datacenter,
		Folders: []string{"labs"}, QuarantineFolder: "labs/quarantine", Ignore: []string{"golden", "/DC0/vm/labs/infra"}}
	if mod != nil {
		mod(&cfg)
	}
	creds, err := vsphere.ReadCredentials(sim.CredentialsFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := vsphere.New(cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// TestCrawl: the VMs of the configured folders (and below) with their notes, UUID and path;
// not those of other folders, the ignored ones (by name and by folder), nor the quarantined.
func TestCrawl(t *testing.T) {
	sim := vspheretest.Start(t)
	_, ana := sim.VM("labs", "ana-dev", "EC_OWNER=ana\nEC_TTL=1w")
	_, bob := sim.VM("labs/team-b", "bob-test", "")
	sim.VM("labs", "golden", "template-like, never touched")
	sim.VM("labs/infra", "dns", "")
	sim.VM("labs/quarantine", "old-expired-2026-01-01", "")
	sim.VM("prod", "db", "EC_OWNER=ops")
	got, err := client(t, sim, nil).Crawl(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.VMs) != 2 || got.Ignored != 2 {
		t.Fatalf("crawl = %+v, want ana-dev and bob-test, 2 ignored", got)
	}
	a, b := got.VMs[0], got.VMs[1]
	if a.Name != "ana-dev" || a.UUID != ana || a.Folder != "labs" || a.Path != "/DC0/vm/labs/ana-dev" || a.Notes != "EC_OWNER=ana\nEC_TTL=1w" ||
		a.Datacenter != "DC0" || a.PowerState != "poweredOn" || a.Created.IsZero() {
		t.Errorf("ana-dev = %+v", a)
	}
	if b.Name != "bob-test" || b.UUID != bob || b.Folder != "labs/team-b" || b.Notes != "" {
		t.Errorf("bob-test = %+v", b)
	}
	if a.UUID != strings.ToLower(a.UUID) {
		t.Errorf("UUID %s is not lower case", a.UUID)
	}
}

// TestCrawlMissingFolder: a configured folder or quarantine folder that does not exist fails
// the crawl with an error naming it, rather than finding no VMs.
func TestCrawlMissingFolder(t *testing.T) {
	sim := vspheretest.Start(t)
	sim.VM("labs", "ana-dev", "EC_OWNER=ana\nEC_TTL=1w")
	sim.Folder("labs/quarantine")
	for _, tt := range []struct {
		name string
		mod  func(*vsphere.Config)
		err  string
	}{
		{"a folder", func(c *vsphere.Config) { c.Folders = []string{"labs", "lasb/ci"} }, `--vsphere-folders: folder "lasb/ci" (/DC0/vm/lasb/ci) does not exist`},
		{"an inventory path", func(c *vsphere.Config) { c.Folders = []string{"/DC0/vm/nope"} }, `folder "/DC0/vm/nope" (/DC0/vm/nope) does not exist`},
		{"the quarantine folder", func(c *vsphere.Config) { c.QuarantineFolder = "labs/expired" }, `--vsphere-quarantine-folder: folder "labs/expired"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := client(t, sim, tt.mod).Crawl(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, vsphere.ErrConfig) {
				t.Errorf("crawl = %+v, %v; want %q", got, err, tt.err)
			}
		})
	}
	if got, err := client(t, sim, func(c *vsphere.Config) { c.Folders = []string{"/DC0/vm"} }).Crawl(context.Background()); err != nil || len(got.VMs) != 1 {
		t.Errorf("the whole VM folder: %+v, %v", got, err)
	}
}

// TestQuarantine: powered off, renamed with the date, moved into the quarantine folder; a
// second call changes nothing; the VM is never destroyed.
func TestQuarantine(t *testing.T) {
	sim := vspheretest.Start(t)
	vm, uuid := sim.VM("labs", "ana-dev", "EC_OWNER=ana")
	sim.Folder("labs/quarantine")
	c := client(t, sim, nil)
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	d, err := c.Quarantine(context.Background(), uuid, at)
	if err != nil {
		t.Fatal(err)
	}
	if !d.PoweredOff || !d.Renamed || !d.Moved || d.Name != "ana-dev-expired-2026-11-27-"+uuid[:8] {
		t.Errorf("done = %+v", d)
	}
	name, folder, power, notes := sim.Props(vm)
	if name != "ana-dev-expired-2026-11-27-"+uuid[:8] || folder != "/DC0/vm/labs/quarantine" || power != "poweredOff" || notes != "EC_OWNER=ana" {
		t.Errorf("VM after quarantine: %s in %s, %s, notes %q", name, folder, power, notes)
	}
	d, err = c.Quarantine(context.Background(), uuid, at.Add(48*time.Hour))
	if err != nil || d.PoweredOff || d.Renamed || d.Moved {
		t.Errorf("second quarantine = %+v, %v; want nothing done", d, err)
	}
	if name, _, _, _ := sim.Props(vm); name != "ana-dev-expired-2026-11-27-"+uuid[:8] {
		t.Errorf("renamed again: %s", name)
	}
	if _, err := c.Quarantine(context.Background(), "00000000-0000-0000-0000-000000000000", at); !errors.Is(err, vsphere.ErrNotFound) {
		t.Errorf("unknown VM: %v, want ErrNotFound", err)
	}
	if ok, err := c.Exists(context.Background(), uuid); !ok || err != nil {
		t.Errorf("Exists(a quarantined VM) = %v, %v; want true", ok, err)
	}
	if ok, err := c.Exists(context.Background(), "00000000-0000-0000-0000-000000000000"); ok || err != nil {
		t.Errorf("Exists(an unknown VM) = %v, %v; want false", ok, err)
	}
}

// TestQuarantinePowerOffFails: a failed power-off stops the quarantine — nothing renamed or
// moved — and the error says which step; once vSphere lets it, a retry does everything.
func TestQuarantinePowerOffFails(t *testing.T) {
	sim := vspheretest.Start(t)
	vm, uuid := sim.VM("labs", "busy", "")
	sim.Folder("labs/quarantine")
	c := client(t, sim, nil)
	restore := sim.FailPowerOff("busy")
	_, err := c.Quarantine(context.Background(), uuid, time.Now())
	var step *vsphere.StepError
	if !errors.As(err, &step) || step.Step != vsphere.StepPowerOff {
		t.Fatalf("err = %v, want a power-off StepError", err)
	}
	if name, folder, power, _ := sim.Props(vm); name != "busy" || folder != "/DC0/vm/labs" || power != "poweredOn" {
		t.Errorf("after a failed power-off: %s in %s, %s", name, folder, power)
	}
	restore()
	if d, err := c.Quarantine(context.Background(), uuid, time.Now()); err != nil || !d.PoweredOff || !d.Moved {
		t.Errorf("retry = %+v, %v", d, err)
	}
}

// TestQuarantineName: the date and a fragment of the instance UUID, so that two VMs of the same
// name due the same day do not collide in the quarantine folder; the name part (never the
// suffix) cut to 80 characters; a name carrying the suffix already kept.
func TestQuarantineName(t *testing.T) {
	at := time.Date(2026, 3, 4, 23, 0, 0, 0, time.UTC)
	const a, b = "4213c3c0-0a3b-4b2d-9b5c-1a2b3c4d5e6f", "5f0e1d2c-0a3b-4b2d-9b5c-1a2b3c4d5e6f"
	long := strings.Repeat("n", 80)
	tests := []struct{ name, in, uuid, want string }{
		{"plain", "ana-dev", a, "ana-dev-expired-2026-03-04-4213c3c0"},
		{"same name, another VM", "ana-dev", b, "ana-dev-expired-2026-03-04-5f0e1d2c"},
		{"upper-case UUID", "ana-dev", strings.ToUpper(a), "ana-dev-expired-2026-03-04-4213c3c0"},
		{"already quarantined", "ana-dev-expired-2025-12-31-4213c3c0", a, "ana-dev-expired-2025-12-31-4213c3c0"},
		{"quarantined by an earlier release: the fragment added, the date kept", "ana-dev-expired-2025-12-31", a, "ana-dev-expired-2025-12-31-4213c3c0"},
		{"a clone of another VM's quarantine", "ana-dev-expired-2025-12-31-5f0e1d2c", a, "ana-dev-expired-2025-12-31-5f0e1d2c-expired-2026-03-04-4213c3c0"},
		{"cut to 80 characters, the name part", long, a, long[:52] + "-expired-2026-03-04-4213c3c0"},
		{"cut, multi-byte", strings.Repeat("ä", 80), a, strings.Repeat("ä", 52) + "-expired-2026-03-04-4213c3c0"},
		{"an earlier release's long name", long[:61] + "-expired-2025-12-31", a, long[:52] + "-expired-2025-12-31-4213c3c0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := vsphere.QuarantineName(tt.in, tt.uuid, at)
			if got != tt.want || len([]rune(got)) > 80 {
				t.Errorf("QuarantineName(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := vsphere.QuarantineName(got, tt.uuid, at.Add(48*time.Hour)); again != got {
				t.Errorf("QuarantineName(%q) again = %q, want it kept", got, again)
			}
		})
	}
}

// TestQuarantineSameName: two VMs of the same name in different folders, due the same day,
// both end up in the quarantine folder under different names.
func TestQuarantineSameName(t *testing.T) {
	sim := vspheretest.Start(t)
	vmA, uuidA := sim.VM("labs/team-a", "ubuntu", "")
	vmB, uuidB := sim.VM("labs/team-b", "ubuntu", "")
	sim.Folder("labs/quarantine")
	c := client(t, sim, nil)
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, u := range []string{uuidA, uuidB} {
		if _, err := c.Quarantine(context.Background(), u, at); err != nil {
			t.Fatal(err)
		}
	}
	nameA, folderA, _, _ := sim.Props(vmA)
	nameB, folderB, _, _ := sim.Props(vmB)
	if nameA == nameB || folderA != "/DC0/vm/labs/quarantine" || folderB != folderA {
		t.Errorf("after quarantine: %s in %s, %s in %s; want two names in the quarantine folder", nameA, folderA, nameB, folderB)
	}
	if nameA != "ubuntu-expired-2026-11-27-"+uuidA[:8] {
		t.Errorf("name %s", nameA)
	}
}

func TestReadCredentials(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	_ = os.Mkdir(secret, 0o700)
	_ = os.WriteFile(filepath.Join(secret, "username"), []byte("kustos@vsphere.local\n"), 0o600)
	_ = os.WriteFile(filepath.Join(secret, "password"), []byte("s3cret"), 0o600)
	twoLines := filepath.Join(dir, "two")
	_ = os.WriteFile(twoLines, []byte("kustos\ns3cret\n"), 0o600)
	oneLine := filepath.Join(dir, "one")
	_ = os.WriteFile(oneLine, []byte("kustos\n"), 0o600)
	noPassword := filepath.Join(dir, "nopass")
	_ = os.Mkdir(noPassword, 0o700)
	_ = os.WriteFile(filepath.Join(noPassword, "username"), []byte("kustos"), 0o600)
	tests := []struct{ name, path, user, err string }{
		{"a mounted Secret", secret, "kustos@vsphere.local", ""},
		{"a file of two lines", twoLines, "kustos", ""},
		{"one line", oneLine, "", "has 1 lines; want two"},
		{"a Secret without password", noPassword, "", "needs the key password"},
		{"missing", filepath.Join(dir, "nope"), "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := vsphere.ReadCredentials(tt.path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || c.Username != tt.user {
				t.Fatalf("= %v, %v", c, err)
			}
			if strings.Contains(c.String(), "s3cret") {
				t.Errorf("String() shows the password: %s", c)
			}
		})
	}
}

// TestNewURL: --vsphere-url must be https (the SOAP login carries the password), must not hold
// credentials, and must name a host.
func TestNewURL(t *testing.T) {
	for _, tt := range []struct{ url, err string }{
		{"https://vcenter.example.com", ""},
		{"https://vcenter.example.com/sdk", ""},
		{"http://vcenter.example.com", "--vsphere-url=\"http://vcenter.example.com\": want https://HOST"},
		{"HTTP://vcenter.example.com", "want https://HOST"},
		{"vcenter.example.com", "want https://HOST"},
		{"https://root:pw@vcenter", "not the URL"},
		{"http://root:pw@vcenter", "(not shown: it may hold a password)"},
	} {
		_, err := vsphere.New(vsphere.Config{URL: tt.url, Datacenter: "DC0"}, vsphere.Credentials{})
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, vsphere.ErrConfig)) {
			t.Errorf("New(%q) = %v, want %q", tt.url, err, tt.err)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("New(%q): the error shows the password: %v", tt.url, err)
		}
	}
}
