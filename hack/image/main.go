package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := realMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `Usage:
  image build --repo DIR --out DIR --version V --commit SHA --source-date-epoch SECONDS [--tag T]...
  image check --layout DIR --version V --commit SHA
  image push  --layout DIR --ref REGISTRY/REPOSITORY[:TAG] [--digest-file FILE]`

func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("image "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		repo      = fs.String("repo", ".", "build: root of the Kustos repository")
		out       = fs.String("out", "dist/image", "build: the OCI layout to write (replaced)")
		layoutDir = fs.String("layout", "dist/image", "check, push: the OCI layout to read")
		version   = fs.String("version", "", "build, check: the version stamped into the binary and the labels")
		commit    = fs.String("commit", "", "build, check: the commit stamped into the binary and the labels")
		epoch     = fs.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "build: Unix time of every timestamp in the image (default: $SOURCE_DATE_EPOCH)")
		caFile    = fs.String("ca-file", defaultCAFile, "build: the CA bundle copied into the image (Debian's ca-certificates package)")
		ref       = fs.String("ref", "", "push: where to push the index: REGISTRY/REPOSITORY:TAG, or REGISTRY/REPOSITORY for every tag of the layout")
		tags      tagList
		digest    = fs.String("digest-file", "", "push: write the pushed index's digest (sha256:…) to this file")
	)
	fs.Var(&tags, "tag", "build: a tag the layout names the image by (repeat it; default: --version)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	var err error
	switch args[0] {
	case "build":
		var sde time.Time
		if sde, err = parseEpoch(*epoch); err == nil {
			err = build(ctx, buildOptions{Repo: *repo, Out: *out, Version: *version, Commit: *commit, Created: sde, CAFile: *caFile, Tags: tags}, stderr)
		}
	case "check":
		err = check(ctx, checkOptions{Layout: *layoutDir, Version: *version, Commit: *commit}, stdout)
	case "push":
		err = push(ctx, pushOptions{Layout: *layoutDir, Ref: *ref, DigestFile: *digest}, stdout)
	default:
		fmt.Fprintln(stderr, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "image %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// parseEpoch reads SOURCE_DATE_EPOCH (https://reproducible-builds.org/specs/source-date-epoch/).
func parseEpoch(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, errors.New("--source-date-epoch (or $SOURCE_DATE_EPOCH) is empty: the image's timestamps must be fixed, e.g. the commit time (git log -1 --format=%ct)")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("--source-date-epoch=%q: want seconds since 1970-01-01 UTC", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// tagList is a repeatable flag.
type tagList []string

func (l *tagList) String() string     { return strings.Join(*l, ",") }
func (l *tagList) Set(s string) error { *l = append(*l, s); return nil }
