package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at build time by make build:
//
//	-ldflags "-X github.com/kustos-dev/kustos/internal/buildinfo.version=v0.3.0
//	          -X github.com/kustos-dev/kustos/internal/buildinfo.commit=<sha>
//	          -X github.com/kustos-dev/kustos/internal/buildinfo.date=<RFC 3339>"
var (
	version = ""
	commit  = ""
	date    = ""
)

// Info is what is known about the running binary; a field that nothing recorded is "unknown"
// (Version: "dev").
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"goVersion"`
}

// Get is the binary's Info: the -X values, each falling back to the Go toolchain's record.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, date, bi)
}

// resolve picks each field from the -X value, else the build info, else a placeholder.
func resolve(version, commit, date string, bi *debug.BuildInfo) Info {
	i := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version()}
	if bi != nil {
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version // go install github.com/kustos-dev/kustos/cmd/kustos@v…
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && i.Commit == "":
				i.Commit = s.Value
			case s.Key == "vcs.time" && i.Date == "":
				i.Date = s.Value
			}
		}
		if bi.GoVersion != "" {
			i.GoVersion = bi.GoVersion
		}
	}
	if i.Version == "" {
		i.Version = "dev"
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	if i.Date == "" {
		i.Date = "unknown"
	}
	return i
}

// String is the line `kustos version` prints.
func (i Info) String() string {
	return fmt.Sprintf("kustos %s (commit %s, date %s, %s)", i.Version, i.Commit, i.Date, i.GoVersion)
}
