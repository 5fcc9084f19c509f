package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-27T03:00:00Z"}}}
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{name: "ldflags win", version: "v1.2.3", commit: "feed", date: "2026-01-01T00:00:00Z", bi: vcs,
			want: Info{Version: "v1.2.3", Commit: "feed", Date: "2026-01-01T00:00:00Z", GoVersion: "go1.99"}},
		{name: "the toolchain's record when no ldflags", bi: vcs,
			want: Info{Version: "dev", Commit: "abc123", Date: "2026-11-27T03:00:00Z", GoVersion: "go1.99"}},
		{name: "go install of a tagged module", bi: &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v0.4.0"}},
			want: Info{Version: "v0.4.0", Commit: "unknown", Date: "unknown", GoVersion: "go1.99"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolve(tc.version, tc.commit, tc.date, tc.bi); got != tc.want {
				t.Errorf("resolve = %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := Get(); got.Version == "" || got.GoVersion == "" {
		t.Errorf("Get() = %+v: a field is empty", got)
	}
}
