package app

import (
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/actuate/gate"
)

// TestValidateGates: the backup and submission flags are checked at startup, naming the flag.
func TestValidateGates(t *testing.T) {
	gates := func(o *Options) {
		o.Gates = gate.Options{Backup: BackupVelero, BackupTTL: 720 * time.Hour, BackupTimeout: time.Hour, BackupNamespace: "velero",
			Submission: true, SubmissionImage: "ghcr.io/kustos-dev/kustos:v1", SubmissionTimeout: time.Hour, RetryAfter: 30 * time.Minute,
			SubmissionEndpoint: "https://uploads.example.edu/in", SubmissionAllowedHosts: []string{"uploads.example.edu", ".labs.example.edu"}, SubmissionMaxAttempts: 3}
	}
	with := func(f func(*Options)) func(*Options) {
		return func(o *Options) { gates(o); f(o) }
	}
	checkValidate(t, validOptions, []validateCase{
		{"both on", gates, ""},
		{"unknown backup", with(func(o *Options) { o.Gates.Backup = "restic" }), `--backup="restic"`},
		{"no backup timeout", with(func(o *Options) { o.Gates.BackupTimeout = 0 }), "--backup-timeout"},
		{"no Velero namespace", with(func(o *Options) { o.Gates.BackupNamespace = "" }), "--backup-namespace"},
		{"no image", with(func(o *Options) { o.Gates.SubmissionImage = "" }), "--submission-image"},
		{"an endpoint that is not https", with(func(o *Options) { o.Gates.SubmissionEndpoint = "http://uploads.example.edu/in" }), "--submission-endpoint: want an https URL"},
		{"an endpoint with credentials", with(func(o *Options) { o.Gates.SubmissionEndpoint = "https://u:p@uploads.example.edu/in" }), "must not carry credentials"},
		{"an allowed host with a path", with(func(o *Options) { o.Gates.SubmissionAllowedHosts = []string{"uploads.example.edu/x"} }), "--submission-allowed-hosts"},
		{"a wildcard host (egress's syntax is .labs.example.edu)", with(func(o *Options) { o.Gates.SubmissionAllowedHosts = []string{"*.labs.example.edu"} }), "leading dot"},
		{"a host with a wildcard inside", with(func(o *Options) { o.Gates.SubmissionAllowedHosts = []string{"foo*bar.example.edu"} }), "--submission-allowed-hosts"},
		{"no max attempts", with(func(o *Options) { o.Gates.SubmissionMaxAttempts = 0 }), "--submission-max-attempts"},
		{"no retry interval", with(func(o *Options) { o.Gates.RetryAfter = 0 }), "--gate-retry-interval"},
	})
}
