package main

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// inputs are an image's inputs with placeholder binaries (not Go programs: checkBinary refuses
// them, everything else passes).
func inputs(t *testing.T, created time.Time) imageInputs {
	t.Helper()
	ca, err := readCABundle(defaultCAFile)
	if err != nil {
		t.Fatal(err)
	}
	return imageInputs{CA: ca, Version: "v1.2.3", Commit: "0123abcd", Created: created,
		Binaries: map[string][]byte{"amd64": []byte("amd64 binary"), "arm64": []byte("arm64 binary")}}
}

func digest(t *testing.T, in imageInputs) v1.Hash {
	t.Helper()
	idx, err := assemble(in)
	if err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The same inputs give the same digest; the time is part of the inputs, not the clock.
func TestAssembleIsReproducible(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	first := digest(t, inputs(t, at))
	time.Sleep(1100 * time.Millisecond) // a clock read anywhere would now differ
	if again := digest(t, inputs(t, at)); again != first {
		t.Errorf("two builds of the same inputs: %s and %s", first, again)
	}
	if later := digest(t, inputs(t, at.Add(time.Hour))); later == first {
		t.Error("a different SOURCE_DATE_EPOCH gave the same digest: the timestamps are not the given ones")
	}
}

// checkImage passes what assemble builds (but the placeholder binary) and names each problem of
// a changed image.
func TestCheckImage(t *testing.T) {
	idx, err := assemble(inputs(t, time.Unix(1_700_000_000, 0)))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("%d manifests, want 2", len(im.Manifests))
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	plat := *im.Manifests[0].Platform
	o := checkOptions{Version: "v1.2.3", Commit: "0123abcd"}
	for _, tc := range []struct {
		name   string
		change func(*v1.ConfigFile)
		want   []string // substrings of the problems besides the placeholder binary's
	}{
		{name: "as built", change: func(*v1.ConfigFile) {}},
		{name: "root", change: func(c *v1.ConfigFile) { c.Config.User = "0:0" }, want: []string{`user "0:0"`}},
		{name: "no user", change: func(c *v1.ConfigFile) { c.Config.User = "" }, want: []string{`user ""`}},
		{name: "a shell entrypoint", change: func(c *v1.ConfigFile) { c.Config.Entrypoint = []string{"/bin/sh"} }, want: []string{"entrypoint"}},
		{name: "no source label", change: func(c *v1.ConfigFile) { delete(c.Config.Labels, labelSource) }, want: []string{"label " + labelSource}},
		{name: "another version", change: func(c *v1.ConfigFile) { c.Config.Labels[labelVersion] = "dev" }, want: []string{labelVersion + `="dev"`}},
		{name: "another platform", change: func(c *v1.ConfigFile) { c.Architecture = "s390x" }, want: []string{"config is for linux/s390x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			cf = cf.DeepCopy()
			tc.change(cf)
			changed, err := mutate.ConfigFile(img, cf)
			if err != nil {
				t.Fatal(err)
			}
			bin, problems := checkImage(changed, plat, o)
			if !bytes.Equal(bin, []byte(plat.Architecture+" binary")) {
				t.Errorf("checkImage returned binary %q", bin)
			}
			var rest []string
			for _, p := range problems {
				if !strings.Contains(p.Error(), "no Go build information") {
					rest = append(rest, p.Error())
				}
			}
			if len(rest) != len(tc.want) {
				t.Fatalf("problems %q, want %d naming %q", rest, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(rest[i], w) {
					t.Errorf("problem %q does not name %q", rest[i], w)
				}
			}
		})
	}
}

// The layout names the index by every tag it is given (the chart's appVersion and the commit),
// once each, as OCI layouts name tags: an org.opencontainers.image.ref.name annotation per
// entry of index.json.
func TestWriteLayoutTags(t *testing.T) {
	idx, err := assemble(inputs(t, time.Unix(1_700_000_000, 0)))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := idx.Digest()
	for _, tc := range []struct {
		name    string
		tags    []string
		want    []string
		wantErr string
	}{
		{"appVersion and commit", []string{"0.1.0", "07f6d76"}, []string{"0.1.0", "07f6d76"}, ""},
		{"the same twice, once", []string{"0.1.0", "0.1.0"}, []string{"0.1.0"}, ""},
		{"none", nil, nil, "--tag is required"},
		{"not a tag", []string{"0.1.0", "a/b"}, nil, `--tag="a/b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "image")
			err := writeLayout(dir, idx, tc.tags)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("writeLayout: %v, want an error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, tags, err := openLayout(dir)
			if err != nil {
				t.Fatal(err)
			}
			if d, _ := got.Digest(); d != want {
				t.Errorf("layout holds %s, want %s", d, want)
			}
			if strings.Join(tags, ",") != strings.Join(tc.want, ",") {
				t.Errorf("tags %q, want %q", tags, tc.want)
			}
		})
	}
}

// push copies the layout to a registry (go-containerregistry's registry implementation), which
// then serves the same index: under the one tag a reference names, or, for a repository without
// a tag, under every tag the layout has (what `make image-push` does for a build the chart can
// pull by its appVersion).
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	idx, err := assemble(inputs(t, time.Unix(1_700_000_000, 0)))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "image")
	if err := writeLayout(dir, idx, []string{"0.1.0", "07f6d76"}); err != nil {
		t.Fatal(err)
	}
	want, _ := idx.Digest()
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		name, ref  string
		repo       string // where the tags are looked for
		wantTags   []string
		wantAbsent []string
		wantErr    string
	}{
		{"one tag", host + "/one/kustos:v1.2.3", host + "/one/kustos", []string{"v1.2.3"}, []string{"0.1.0", "07f6d76"}, ""},
		{"every tag of the layout", host + "/all/kustos", host + "/all/kustos", []string{"0.1.0", "07f6d76"}, nil, ""},
		{"not a reference", "no tag", "", nil, nil, `--ref="no tag"`},
		{"a digest", host + "/d/kustos@" + want.String(), "", nil, nil, "want REGISTRY/REPOSITORY[:TAG]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			digestFile := filepath.Join(t.TempDir(), "digest")
			var out bytes.Buffer
			err := push(context.Background(), pushOptions{Layout: dir, Ref: tc.ref, DigestFile: digestFile}, &out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("push: %v, want an error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, tag := range tc.wantTags {
				parsed, err := name.ParseReference(tc.repo + ":" + tag)
				if err != nil {
					t.Fatal(err)
				}
				got, err := remote.Index(parsed)
				if err != nil {
					t.Fatalf("%s: %v", parsed, err)
				}
				if d, _ := got.Digest(); d != want {
					t.Errorf("the registry serves %s at %s, want %s", d, parsed, want)
				}
				if !strings.Contains(out.String(), parsed.String()+"@"+want.String()) {
					t.Errorf("push printed %q, not %s@%s", out.String(), parsed, want)
				}
			}
			for _, tag := range tc.wantAbsent {
				parsed, _ := name.ParseReference(tc.repo + ":" + tag)
				if _, err := remote.Index(parsed); err == nil {
					t.Errorf("%s was pushed too", parsed)
				}
			}
			if b, _ := os.ReadFile(digestFile); strings.TrimSpace(string(b)) != want.String() {
				t.Errorf("digest file %q, want %s", b, want)
			}
		})
	}
}

func TestWriteLayoutRefusesOtherDirectories(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	idx, err := assemble(inputs(t, time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if err := writeLayout(dir, idx, []string{"v1"}); err == nil || !strings.Contains(err.Error(), "not an OCI layout") {
		t.Fatalf("writeLayout over a directory that is not a layout: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil {
		t.Error("writeLayout removed a file it does not own")
	}
}

func TestReadCABundle(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.crt")
	if err := os.WriteFile(empty, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.crt"), "apt-get install ca-certificates"},
		{empty, "holds no PEM certificate"},
	} {
		if _, err := readCABundle(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("readCABundle(%s): %v, want an error saying %q", tc.path, err, tc.want)
		}
	}
}

func TestParseEpoch(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		want time.Time
	}{
		{"1700000000", true, time.Unix(1_700_000_000, 0).UTC()},
		{"", false, time.Time{}},
		{"yesterday", false, time.Time{}},
		{"-1", false, time.Time{}},
	} {
		got, err := parseEpoch(tc.in)
		if (err == nil) != tc.ok || !got.Equal(tc.want) {
			t.Errorf("parseEpoch(%q) = %v, %v", tc.in, got, err)
		}
	}
}
