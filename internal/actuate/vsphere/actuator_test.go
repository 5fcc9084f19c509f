package vsphere

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	detectvsphere "github.com/kustos-dev/kustos/internal/detect/vsphere"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/vsphere"
	"github.com/kustos-dev/kustos/internal/vsphere/vspheretest"
)

type next struct{ got []lifecycle.Change }

func (n *next) Apply(_ context.Context, c lifecycle.Change, _ time.Time, _ lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	n.got = append(n.got, c)
	return lifecycle.Outcome{Applied: true}, nil
}

// TestActuator against vcsim: a VM's Delete is a quarantine only with the opt-in, a
// ScaleToZero a power-off, a failed power-off leaves the VM as it was, a VM gone is done, any
// other Edit is refused, and what is not a VM goes to Next.
func TestActuator(t *testing.T) {
	decided := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name          string
		op            lifecycle.EditOp
		mayQuarantine bool
		failPowerOff  bool
		unknown, pod  bool
		wantErr       error
		wantName      string
		wantFolder    string
		wantPower     string
		applied       bool
	}{
		{name: "quarantine", op: lifecycle.EditDelete, mayQuarantine: true, applied: true,
			wantName: "ana-dev-expired-2026-11-27-<uuid>", wantFolder: "/DC0/vm/labs/quarantine", wantPower: "poweredOff"},
		{name: "no opt-in: refused, the VM untouched", op: lifecycle.EditDelete, wantErr: lifecycle.ErrDeleteNotAllowed,
			wantName: "ana-dev", wantFolder: "/DC0/vm/labs", wantPower: "poweredOn"},
		{name: "pause: powered off, not renamed or moved", op: lifecycle.EditScaleToZero, applied: true,
			wantName: "ana-dev", wantFolder: "/DC0/vm/labs", wantPower: "poweredOff"},
		{name: "the power-off fails: nothing renamed or moved", op: lifecycle.EditDelete, mayQuarantine: true, failPowerOff: true,
			wantErr: &vsphere.StepError{}, wantName: "ana-dev", wantFolder: "/DC0/vm/labs", wantPower: "poweredOn"},
		{name: "a VM no longer there is done", op: lifecycle.EditDelete, mayQuarantine: true, unknown: true},
		{name: "another edit is refused", op: lifecycle.EditSetAnnotations, mayQuarantine: true, wantErr: lifecycle.ErrInvalidChange,
			wantName: "ana-dev", wantFolder: "/DC0/vm/labs", wantPower: "poweredOn"},
		{name: "not a VM: Next", op: lifecycle.EditDelete, pod: true, applied: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := vspheretest.Start(t)
			vm, uuid := sim.VM("labs", "ana-dev", "EC_OWNER=ana\nEC_TTL=1d")
			sim.Folder("labs/quarantine")
			creds, err := vsphere.ReadCredentials(sim.CredentialsFile)
			if err != nil {
				t.Fatal(err)
			}
			c, err := vsphere.New(vsphere.Config{URL: sim.URL, Insecure: true, Datacenter: "DC0", Folders: []string{"labs"}, QuarantineFolder: "labs/quarantine"}, creds)
			if err != nil {
				t.Fatal(err)
			}
			if tc.failPowerOff {
				sim.FailPowerOff("ana-dev")
			}
			n := &next{}
			a := Actuator{VMs: c, MayQuarantine: tc.mayQuarantine, Next: n, Log: logr.Discard()}
			target := detectvsphere.Target(uuid)
			if tc.unknown {
				target = detectvsphere.Target("00000000-0000-0000-0000-000000000000")
			}
			if tc.pod {
				target = lifecycle.Target{Version: "v1", Kind: "Pod", Namespace: "a", Name: "b"}
			}
			ch := lifecycle.Change{Key: lifecycle.KeyFor("expiry", target), Detector: "expiry", Target: target, Edit: lifecycle.Edit{Op: tc.op},
				Evidence: []map[string]string{{"vm": "ana-dev"}}}
			out, err := a.Apply(context.Background(), ch, decided, lifecycle.ProposeOptions{})
			var step *vsphere.StepError
			switch want := tc.wantErr; {
			case want == nil && err != nil:
				t.Fatalf("err = %v", err)
			case errors.As(want, &step):
				if !errors.As(err, &step) || step.Step != vsphere.StepPowerOff {
					t.Fatalf("err = %v, want a power-off StepError", err)
				}
			case want != nil && !errors.Is(err, want):
				t.Fatalf("err = %v, want %v", err, want)
			}
			if out.Applied != tc.applied {
				t.Errorf("applied = %v, want %v", out.Applied, tc.applied)
			}
			if tc.pod != (len(n.got) == 1) {
				t.Errorf("Next got %d changes", len(n.got))
			}
			if tc.wantName != "" {
				tc.wantName = strings.ReplaceAll(tc.wantName, "<uuid>", uuid[:8])
				name, folder, power, _ := sim.Props(vm)
				if name != tc.wantName || folder != tc.wantFolder || power != tc.wantPower {
					t.Errorf("VM: %s in %s, %s; want %s in %s, %s", name, folder, power, tc.wantName, tc.wantFolder, tc.wantPower)
				}
			}
		})
	}
}
