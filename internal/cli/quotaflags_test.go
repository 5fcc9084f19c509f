package cli

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestQuotaWindowFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, q Quota)
		wantErr string
	}{
		{
			name: "defaults",
			check: func(t *testing.T, q Quota) {
				w := q.Window
				if w.Length != 14*24*time.Hour || w.Shrink || w.ShrinkCooldown != 7*24*time.Hour || w.MaxShrink.Cmp(big.NewRat(1, 4)) != 0 ||
					q.Defaults.Headroom.Cmp(big.NewRat(1, 4)) != 0 || q.Defaults.Tolerance.Cmp(big.NewRat(15, 100)) != 0 {
					t.Fatalf("got %+v, headroom %v, tolerance %v", w, q.Defaults.Headroom, q.Defaults.Tolerance)
				}
			},
		},
		{
			name: "set",
			args: []string{"--headroom=0.1", "--tolerance=5%", "--quota-window=2w", "--enable-shrink", "--shrink-cooldown=3d", "--max-shrink=50%"},
			check: func(t *testing.T, q Quota) {
				w := q.Window
				if w.Length != 14*24*time.Hour || !w.Shrink || w.ShrinkCooldown != 3*24*time.Hour || w.MaxShrink.Cmp(big.NewRat(1, 2)) != 0 ||
					q.Defaults.Headroom.Cmp(big.NewRat(1, 10)) != 0 || q.Defaults.Tolerance.Cmp(big.NewRat(1, 20)) != 0 {
					t.Fatalf("got %+v, headroom %v, tolerance %v", w, q.Defaults.Headroom, q.Defaults.Tolerance)
				}
			},
		},
		{name: "a window of hours", args: []string{"--quota-window=36h"}, wantErr: `invalid argument "36h" for "--quota-window" flag: must be whole days (7d, 2w)`},
		{name: "no cut", args: []string{"--max-shrink=0"}, wantErr: `invalid argument "0" for "--max-shrink" flag: must be greater than 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
			var q Quota
			q.AddFlags(fs)
			q.AddWindowFlags(fs)
			err := fs.Parse(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, q)
		})
	}
}
