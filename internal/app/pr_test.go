package app

import (
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/actuate/group"

	"github.com/kustos-dev/kustos/internal/gitops/github"
)

func validPR() Options {
	o := validOptions()
	o.Mode = ModePR
	o.PR = group.Options{
		GitHub:       github.Config{TokenFile: "/secrets/token", Repository: "acme/gitops"},
		PollInterval: time.Minute,
	}
	return o
}

func TestValidatePRMode(t *testing.T) {
	checkValidate(t, validPR, []validateCase{
		{"token file is enough", func(*Options) {}, ""},
		{"app credentials are enough", func(o *Options) {
			o.PR.GitHub = github.Config{AppID: 1, InstallationID: 2, PrivateKeyFile: "/k.pem", Repository: "acme/gitops"}
		}, ""},
		{"repository required", func(o *Options) { o.PR.GitHub.Repository = "" }, "--git-repo"},
		{"repository is owner/name", func(o *Options) { o.PR.GitHub.Repository = "gitops" }, "--git-repo"},
		{"no credentials", func(o *Options) { o.PR.GitHub.TokenFile = "" }, "--github-token-file"},
		{"two credential kinds", func(o *Options) {
			o.PR.GitHub.PrivateKeyFile, o.PR.GitHub.AppID, o.PR.GitHub.InstallationID = "/k.pem", 1, 2
		}, "mutually exclusive"},
		{"app id required", func(o *Options) {
			o.PR.GitHub = github.Config{PrivateKeyFile: "/k.pem", InstallationID: 2, Repository: "a/b"}
		}, "--github-app-id"},
		{"installation id required", func(o *Options) { o.PR.GitHub = github.Config{PrivateKeyFile: "/k.pem", AppID: 2, Repository: "a/b"} }, "--github-installation-id"},
		{"bad api url", func(o *Options) { o.PR.GitHub.APIURL = "ftp://x" }, "--github-api-url"},
		{"poll interval", func(o *Options) { o.PR.PollInterval = 0 }, "--pr-poll-interval"},
		{"absolute git path", func(o *Options) { o.PR.Paths = []string{"/clusters"} }, "--git-path"},
		{"git path climbing by ..", func(o *Options) { o.PR.Paths = []string{"clusters/../other"} }, `--git-path="clusters/../other": want a path relative to the repository root: a ".." segment`},
		{"unknown mode", func(o *Options) { o.Mode = "patch" }, `--mode="patch"`},
	})
}
