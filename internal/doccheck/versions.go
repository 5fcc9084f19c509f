package doccheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// Chart is what charts/kustos/Chart.yaml says about versions: the chart's own, which `helm
// install --version` names, and its appVersion, the image tag the chart pulls by default.
type Chart struct {
	Version    string `json:"version"`
	AppVersion string `json:"appVersion"`
}

// ReadChart reads the chart's versions from root/charts/kustos/Chart.yaml.
func ReadChart(root string) (Chart, error) {
	var c Chart
	b, err := os.ReadFile(filepath.Join(root, "charts", "kustos", "Chart.yaml"))
	if err != nil {
		return c, err
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("charts/kustos/Chart.yaml: %w", err)
	}
	if c.Version == "" || c.AppVersion == "" {
		return c, errors.New("charts/kustos/Chart.yaml names no version or appVersion")
	}
	return c, nil
}

// VersionKind is which of the chart's versions a mention in the documentation stands for.
type VersionKind string

const (
	ChartVersion VersionKind = "the chart's version"    // helm --version
	AppVersion   VersionKind = "the chart's appVersion" // an image tag of kustos
)

// Mention is a version the documentation names, where it names it.
type Mention struct {
	Line    int
	Kind    VersionKind
	Version string
	Text    string
}

// A version is written with a digit first (0.1.0, v0.1.0); a placeholder (<version>) or a
// name (dev) is not a version and not checked.
var (
	helmVersion = regexp.MustCompile(`--version[= ]+(v?\d[^\s\\` + "`" + `"',)]*)`)
	imageTag    = regexp.MustCompile(`(?:/kustos:|image\.tag=)(v?\d[^\s\\` + "`" + `"',)]*)`)
)

// Versions returns the chart and image versions md names: `--version X` of a helm command, and
// an image tag of kustos (…/kustos:X, image.tag=X), wherever they are, code included.
func Versions(md string) []Mention {
	var out []Mention
	for i, line := range strings.Split(md, "\n") {
		for _, m := range helmVersion.FindAllStringSubmatch(line, -1) {
			out = append(out, Mention{i + 1, ChartVersion, m[1], m[0]})
		}
		for _, m := range imageTag.FindAllStringSubmatch(line, -1) {
			out = append(out, Mention{i + 1, AppVersion, m[1], m[0]})
		}
	}
	return out
}
