package main

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/app"
)

func TestRunFlagsPRMode(t *testing.T) {
	o, _, _, err := runFlags([]string{
		"--mode=pr", "--state-namespace=x",
		"--github-api-url=https://ghe.example.com/api/v3/", "--github-app-id=12", "--github-installation-id=34",
		"--github-private-key-file=/secrets/key.pem", "--git-repo=acme/gitops", "--git-base-branch=main",
		"--cluster-name=prod", "--git-path=clusters/prod/", "--git-path=shared/,base/ ",
		"--pr-labels=kustos, quota-resize", "--enable-auto-merge", "--pr-poll-interval=30s",
	}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	p := o.PR
	if o.Mode != app.ModePR || p.GitHub.APIURL != "https://ghe.example.com/api/v3/" || p.GitHub.AppID != 12 ||
		p.GitHub.InstallationID != 34 || p.GitHub.PrivateKeyFile != "/secrets/key.pem" || p.GitHub.Repository != "acme/gitops" ||
		p.BaseBranch != "main" || p.Cluster != "prod" || !p.AutoMerge || p.PollInterval != 30*time.Second {
		t.Errorf("PR options: %+v", p)
	}
	if want := []string{"clusters/prod/", "shared/", "base/"}; !slices.Equal(p.Paths, want) {
		t.Errorf("paths %q, want %q", p.Paths, want)
	}
	if want := []string{"kustos", "quota-resize"}; !slices.Equal(p.Labels, want) {
		t.Errorf("labels %q, want %q", p.Labels, want)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("valid PR options rejected: %v", err)
	}
}

func TestRunFlagsPRDefaults(t *testing.T) {
	o, _, _, err := runFlags([]string{"--state-namespace=x"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Mode != app.ModeObserve || o.PR.AutoMerge || o.PR.PollInterval != time.Minute || len(o.PR.Paths) != 0 || len(o.PR.Labels) != 0 {
		t.Errorf("PR defaults: mode=%s %+v", o.Mode, o.PR)
	}
}
