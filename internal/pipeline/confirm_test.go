package pipeline

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// TestConfirmationsAgreement: which looks a merge stands on. A look that opens, joins or follows
// its Key's proposal agrees with it, on the target it read and the Lease version it left; a
// look that withdraws, or fails, leaves the last agreement standing; a Key without a proposal is
// forgotten.
func TestConfirmationsAgreement(t *testing.T) {
	// agreedAt is the Lease version the row's last agreeing look left ("": the Lease's at the end).
	var agreedAt string
	rows := []struct {
		name string
		do   func(w *world, c *Confirmations)
		// agreed is the Seen remembered for testKey ("-": none), at the Lease's version then.
		agreed string
	}{
		{"the look that opens the proposal agrees, at the Lease it locked", func(w *world, c *Confirmations) {
			w.seen, w.wants = "s1", cpu(testKey, 12)
			w.mustRun(c)
		}, "s1"},
		{"a look following the open proposal agrees anew", func(w *world, c *Confirmations) {
			w.seen, w.wants = "s1", cpu(testKey, 12)
			w.mustRun(c)
			w.seen = "s2" // a label it does not decide on differently
			w.mustRun(c)
		}, "s2"},
		{"a look that withdraws, then fails: the last agreement stands", func(w *world, c *Confirmations) {
			w.seen, w.wants = "s1", cpu(testKey, 12)
			w.mustRun(c)
			agreedAt = w.rec().Version
			w.seen, w.wants, w.withdraw = "opted-out", nil, "its owner opted it out"
			w.forge.failWithdraw = errCrash
			p := w.replica("a")
			p.Confirm = c
			if _, err := w.run(p); err == nil {
				w.t.Fatal("the withdrawal did not fail")
			}
		}, "s1"}, // the Lease moved since (the withdrawal's record): a merge waits for the next look
		{"a look that holds the merge (its evidence unknown): forgotten, so no group member's merge stands on it", func(w *world, c *Confirmations) {
			w.seen, w.wants = "s1", cpu(testKey, 12)
			w.mustRun(c)
			w.hold = "whether it was used since cannot be told now"
			w.mustRun(c)
		}, "-"},
		{"a look that withdraws: forgotten", func(w *world, c *Confirmations) {
			w.seen, w.wants = "s1", cpu(testKey, 12)
			w.mustRun(c)
			w.seen, w.wants, w.withdraw = "opted-out", nil, "its owner opted it out"
			w.mustRun(c)
		}, "-"},
		{"a look whose proposal cannot be made: nothing agreed", func(w *world, c *Confirmations) {
			w.seen, w.wants = "s1", cpu(testKey, 12)
			w.forge.failApply = errCrash
			p := w.replica("a")
			p.Confirm = c
			if _, err := w.run(p); err == nil {
				w.t.Fatal("the proposal did not fail")
			}
		}, "-"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			w := newWorld(t, "pr")
			c := &Confirmations{Log: logr.Discard()}
			agreedAt = ""
			row.do(w, c)
			if agreedAt == "" {
				agreedAt = w.rec().Version
			}
			a, ok := c.agreed[testKey]
			switch {
			case row.agreed == "-" && ok:
				t.Errorf("agreed %+v, want nothing", a)
			case row.agreed != "-" && (!ok || a.seen != row.agreed || a.lease != agreedAt):
				t.Errorf("agreed %+v (remembered %v), want seen %q at the Lease's version %q", a, ok, row.agreed, agreedAt)
			}
		})
	}
}

func (w *world) mustRun(c *Confirmations) {
	w.t.Helper()
	p := w.replica("a")
	p.Confirm = c
	if _, err := w.run(p); err != nil {
		w.t.Fatal(err)
	}
}

// TestUnconfirmed: before a merge, each target of the merged commit is read from the API
// server; the first that is not as its agreeing look read it (target or Lease), or that no look
// has agreed to, is returned.
func TestUnconfirmed(t *testing.T) {
	a, b := lifecycle.Key("expiry/Deployment.apps/t/a"), lifecycle.Key("expiry/Deployment.apps/t/b")
	quota := lifecycle.Key("quota/t/compute")
	errRead := errors.New("connection refused")
	type target struct {
		seen   string
		exists bool
		err    error
	}
	rows := []struct {
		name     string
		keys     []lifecycle.Key
		agreed   map[lifecycle.Key]agreement
		leases   map[lifecycle.Key]string
		targets  map[lifecycle.Key]target
		leaseErr error
		want     lifecycle.Key
		wantErr  error
	}{
		{name: "every target and Lease as agreed", keys: []lifecycle.Key{a, b},
			agreed: map[lifecycle.Key]agreement{a: {"sa", "1"}, b: {"sb", "2"}}, leases: map[lifecycle.Key]string{a: "1", b: "2"},
			targets: map[lifecycle.Key]target{a: {"sa", true, nil}, b: {"sb", true, nil}}},
		{name: "a member's target moved (its cache was behind)", keys: []lifecycle.Key{a, b},
			agreed: map[lifecycle.Key]agreement{a: {"sa", "1"}, b: {"sb", "2"}}, leases: map[lifecycle.Key]string{a: "1", b: "2"},
			targets: map[lifecycle.Key]target{a: {"sa", true, nil}, b: {"opted-out", true, nil}}, want: b},
		{name: "a member's Lease moved (an extension recorded elsewhere)", keys: []lifecycle.Key{a, b},
			agreed: map[lifecycle.Key]agreement{a: {"sa", "1"}, b: {"sb", "2"}}, leases: map[lifecycle.Key]string{a: "1", b: "3"},
			targets: map[lifecycle.Key]target{a: {"sa", true, nil}, b: {"sb", true, nil}}, want: b},
		{name: "a member no look of this process agreed to", keys: []lifecycle.Key{a, b},
			agreed: map[lifecycle.Key]agreement{a: {"sa", "1"}}, leases: map[lifecycle.Key]string{a: "1", b: "2"},
			targets: map[lifecycle.Key]target{a: {"sa", true, nil}, b: {"sb", true, nil}}, want: b},
		{name: "a member gone from the API server: nothing left to keep", keys: []lifecycle.Key{a, b},
			agreed: map[lifecycle.Key]agreement{a: {"sa", "1"}, b: {"sb", "2"}}, leases: map[lifecycle.Key]string{a: "1", b: "2"},
			targets: map[lifecycle.Key]target{a: {"sa", true, nil}, b: {"", false, nil}}},
		{name: "a member gone that no look of this process agreed to (none will: it is gone)", keys: []lifecycle.Key{a, b},
			agreed: map[lifecycle.Key]agreement{a: {"sa", "1"}}, leases: map[lifecycle.Key]string{a: "1"},
			targets: map[lifecycle.Key]target{a: {"sa", true, nil}, b: {"", false, nil}}},
		{name: "a detector whose targets are not read: its Lease alone", keys: []lifecycle.Key{quota},
			agreed: map[lifecycle.Key]agreement{quota: {"", "7"}}, leases: map[lifecycle.Key]string{quota: "7"}},
		{name: "a target that cannot be read: an error, no merge", keys: []lifecycle.Key{a},
			agreed: map[lifecycle.Key]agreement{a: {"sa", "1"}}, leases: map[lifecycle.Key]string{a: "1"},
			targets: map[lifecycle.Key]target{a: {"", false, errRead}}, wantErr: errRead},
		{name: "a Lease that cannot be read: an error, no merge", keys: []lifecycle.Key{a},
			agreed: map[lifecycle.Key]agreement{a: {"sa", "1"}}, leaseErr: errRead, wantErr: errRead,
			targets: map[lifecycle.Key]target{a: {"sa", true, nil}}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			c := &Confirmations{Log: logr.Discard(), agreed: row.agreed,
				Lease: func(_ context.Context, k lifecycle.Key) (state.Record, error) {
					return state.Record{Key: k, Version: row.leases[k]}, row.leaseErr
				}}
			c.Register("expiry", func(_ context.Context, k lifecycle.Key) (string, bool, error) {
				tg, ok := row.targets[k]
				if !ok {
					t.Fatalf("%s read, but it is not in the row", k)
				}
				return tg.seen, tg.exists, tg.err
			})
			got, err := c.Unconfirmed(context.Background(), row.keys)
			if !errors.Is(err, row.wantErr) || got != row.want {
				t.Errorf("Unconfirmed = %q, %v; want %q, %v", got, err, row.want, row.wantErr)
			}
		})
	}
}
