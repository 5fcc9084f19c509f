package vsphere

import (
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/vsphere"
)

// TestPolicyOf: where a VM's lifetime comes from — its notes on first sight, kept afterwards,
// the notes winning when they say something else, and counted from the kept start.
func TestPolicyOf(t *testing.T) {
	created := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	now := created.Add(48 * time.Hour)
	firstSeen := created.Add(time.Hour)
	vm := vsphere.VM{UUID: "4213c3c0-0a3b-4b2d-9b5c-1a2b3c4d5e6f", Name: "ana-dev", Folder: "labs", Path: "/DC0/vm/labs/ana-dev", Datacenter: "DC0", Created: created}
	noDate := vm
	noDate.Created = time.Time{}
	day := 24 * time.Hour
	for _, tc := range []struct {
		name         string
		vm           vsphere.VM
		notes        string
		kept         expiry.Kept
		wantOwner    string
		wantDeadline time.Time
		wantKept     expiry.Kept
		wantFrom     string
		missing      []string
		problem      string
	}{
		{name: "first sight: the notes, counted from the creation date", vm: vm, notes: "EC_OWNER=ana\nEC_TTL=3d",
			wantOwner: "ana", wantDeadline: created.Add(3 * day), wantKept: expiry.Kept{Owner: "ana", TTL: "3d", Since: created}, wantFrom: `EC_TTL="3d" counted from 2026-11-01T08:00:00Z, the notes of VM "ana-dev"`},
		{name: "first sight without a creation date: counted from now", vm: noDate, notes: "kustos.io/owner=ana\nkustos.io/ttl=1d",
			wantOwner: "ana", wantDeadline: now.Add(day), wantKept: expiry.Kept{Owner: "ana", TTL: "1d", Since: now}},
		{name: "rolled back: the notes are gone, the kept lifetime holds", vm: vm, notes: "",
			kept: expiry.Kept{Owner: "ana", TTL: "3d", Since: firstSeen}, wantOwner: "ana", wantDeadline: firstSeen.Add(3 * day),
			wantKept: expiry.Kept{Owner: "ana", TTL: "3d", Since: firstSeen}, wantFrom: "kept by Kustos since 2026-11-01T09:00:00Z"},
		{name: "a human wrote a longer lifetime: the notes win, from the same start", vm: vm, notes: "EC_TTL=1w",
			kept: expiry.Kept{Owner: "ana", TTL: "3d", Since: firstSeen}, wantOwner: "ana", wantDeadline: firstSeen.Add(7 * day),
			wantKept: expiry.Kept{Owner: "ana", TTL: "1w", Since: firstSeen}},
		{name: "a new owner in the notes wins", vm: vm, notes: "EC_OWNER=bob",
			kept: expiry.Kept{Owner: "ana", TTL: "3d", Since: firstSeen}, wantOwner: "bob", wantDeadline: firstSeen.Add(3 * day),
			wantKept: expiry.Kept{Owner: "bob", TTL: "3d", Since: firstSeen}},
		{name: "rolled back to a snapshot with a shorter lifetime: ignored and reported, the kept lifetime stands", vm: vm, notes: "EC_OWNER=ana\nEC_TTL=1d",
			kept: expiry.Kept{Owner: "ana", TTL: "30d", Since: firstSeen}, wantOwner: "ana", wantDeadline: firstSeen.Add(30 * day),
			wantKept: expiry.Kept{Owner: "ana", TTL: "30d", Since: firstSeen}, wantFrom: "kept by Kustos since",
			problem: `EC_TTL="1d" on the notes of VM "ana-dev": ignored: it would end the VM at 2026-11-02T09:00:00Z, before the lifetime Kustos keeps (EC_TTL="30d" from 2026-11-01T09:00:00Z, until 2026-12-01T09:00:00Z)`},
		{name: "a new owner with a shorter lifetime: both ignored", vm: vm, notes: "EC_OWNER=bob\nEC_TTL=1d",
			kept: expiry.Kept{Owner: "ana", TTL: "3d", Since: firstSeen}, wantOwner: "ana", wantDeadline: firstSeen.Add(3 * day),
			wantKept: expiry.Kept{Owner: "ana", TTL: "3d", Since: firstSeen}, problem: "the kept lifetime stands"},
		{name: "a new owner with a longer lifetime wins", vm: vm, notes: "EC_OWNER=bob\nEC_TTL=1w",
			kept: expiry.Kept{Owner: "ana", TTL: "3d", Since: firstSeen}, wantOwner: "bob", wantDeadline: firstSeen.Add(7 * day),
			wantKept: expiry.Kept{Owner: "bob", TTL: "1w", Since: firstSeen}},
		{name: "the same lifetime written differently wins", vm: vm, notes: "EC_TTL=72h",
			kept: expiry.Kept{Owner: "ana", TTL: "3d", Since: firstSeen}, wantOwner: "ana", wantDeadline: firstSeen.Add(3 * day),
			wantKept: expiry.Kept{Owner: "ana", TTL: "72h", Since: firstSeen}},
		{name: "never in the notes wins over a kept lifetime", vm: vm, notes: "EC_TTL=never",
			kept: expiry.Kept{Owner: "ana", TTL: "3d", Since: firstSeen}, wantOwner: "ana",
			wantKept: expiry.Kept{Owner: "ana", TTL: "never", Since: firstSeen}},
		{name: "a lifetime in the notes after a kept never: ignored", vm: vm, notes: "EC_TTL=30d",
			kept: expiry.Kept{Owner: "ana", TTL: "never", Since: firstSeen}, wantOwner: "ana",
			wantKept: expiry.Kept{Owner: "ana", TTL: "never", Since: firstSeen}, problem: "until never"},
		{name: "no notes, nothing kept: an orphan, nothing to keep", vm: vm, notes: "just a VM", missing: []string{"owner", "lifetime"}},
		{name: "an owner only: an orphan without a lifetime, the owner kept", vm: vm, notes: "EC_OWNER=ana", wantOwner: "ana",
			wantKept: expiry.Kept{Owner: "ana", Since: created}, missing: []string{"lifetime"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			notes, _ := vsphere.ParseNotes(tc.notes)
			p, kept, problems := PolicyOf(tc.vm, notes, tc.kept, expiry.DefaultSettings(), now)
			if tc.problem == "" && len(problems) != 0 || tc.problem != "" && (len(problems) != 1 || !strings.Contains(problems[0].String(), tc.problem)) {
				t.Errorf("problems: %v, want %q", problems, tc.problem)
			}
			if p.Owner != tc.wantOwner || !p.Deadline.Equal(tc.wantDeadline) || kept != tc.wantKept {
				t.Errorf("owner %q deadline %s kept %+v; want %q %s %+v", p.Owner, p.Deadline, kept, tc.wantOwner, tc.wantDeadline, tc.wantKept)
			}
			if strings.Join(p.Missing(), ",") != strings.Join(tc.missing, ",") {
				t.Errorf("missing %v, want %v", p.Missing(), tc.missing)
			}
			if p.Action != expiry.ActionQuarantine || !p.KeptInState || p.Label != `VM "ana-dev" (/DC0/vm/labs, datacenter DC0)` || p.Facts["path"] != vm.Path {
				t.Errorf("policy %+v", p)
			}
			if tc.wantFrom != "" && !strings.Contains(p.From, tc.wantFrom) {
				t.Errorf("from %q, want %q in it", p.From, tc.wantFrom)
			}
		})
	}
	if got := Target("4213C3C0-0A3B-4B2D-9B5C-1A2B3C4D5E6F"); got.Name != vm.UUID || got.Namespace != "" || !IsVM(got) {
		t.Errorf("Target = %+v", got)
	}
}
