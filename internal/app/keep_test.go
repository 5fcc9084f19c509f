package app

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
)

// TestValidateKeepPeriods: --inactivity-keep-periods is checked at start-up, each period
// against --inactivity-keep-max; no periods turn the keep links off.
func TestValidateKeepPeriods(t *testing.T) {
	base := func() Options {
		o := validOptions()
		in := inactivity.DefaultOptions()
		in.Enabled = true
		in.Prometheus.URL = "http://prometheus:9090"
		in.Kinds = []schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "Deployment"}}
		in.Settings.NotificationInterval = time.Hour
		var err error
		if in.Sources, err = activity.Compile(activity.DefaultSources()); err != nil {
			t.Fatal(err)
		}
		o.Inactivity = in
		return o
	}
	checkValidate(t, base, []validateCase{
		{"the defaults (1d,3d,1w, at most 2w)", func(*Options) {}, ""},
		{"no periods: no keep links", func(o *Options) { o.Inactivity.KeepPeriods = nil }, ""},
		{"a period over the maximum", func(o *Options) { o.Inactivity.KeepPeriods = []string{"1d", "3w"} }, "--inactivity-keep-max"},
		{"a period that is no duration", func(o *Options) { o.Inactivity.KeepPeriods = []string{"soon"} }, "--inactivity-keep-periods"},
	})
}
