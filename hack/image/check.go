package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type checkOptions struct {
	Layout, Version, Commit string
}

// check verifies what users of the image rely on and reports every problem it finds.
func check(ctx context.Context, o checkOptions, stdout io.Writer) error {
	if o.Version == "" || o.Commit == "" {
		return errors.New("--version and --commit are required: the image must say what it was built from")
	}
	idx, err := openIndex(o.Layout)
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	var problems []error
	if im.MediaType != types.OCIImageIndex {
		problems = append(problems, fmt.Errorf("index media type %q, want %q", im.MediaType, types.OCIImageIndex))
	}
	for k, want := range map[string]string{labelVersion: o.Version, labelRevision: o.Commit} {
		if im.Annotations[k] != want {
			problems = append(problems, fmt.Errorf("index annotation %s=%q, want %q", k, im.Annotations[k], want))
		}
	}
	var seen []string
	var ran bool
	for _, desc := range im.Manifests {
		if desc.Platform == nil {
			problems = append(problems, fmt.Errorf("manifest %s names no platform", desc.Digest))
			continue
		}
		plat := desc.Platform.OS + "/" + desc.Platform.Architecture
		seen = append(seen, plat)
		img, err := idx.Image(desc.Digest)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", plat, err))
			continue
		}
		bin, errs := checkImage(img, *desc.Platform, o)
		for _, e := range errs {
			problems = append(problems, fmt.Errorf("%s: %w", plat, e))
		}
		if bin != nil && desc.Platform.OS == runtime.GOOS && desc.Platform.Architecture == runtime.GOARCH {
			ran = true
			if out, err := runVersion(ctx, bin, o); err != nil {
				problems = append(problems, fmt.Errorf("%s: %w", plat, err))
			} else {
				fmt.Fprintf(stdout, "image check: %s: /kustos version: %s\n", plat, strings.TrimSpace(out))
			}
		}
	}
	for _, p := range platforms {
		if plat := p.OS + "/" + p.Architecture; !slices.Contains(seen, plat) {
			problems = append(problems, fmt.Errorf("the index has no image for %s (it has %v)", plat, seen))
		}
	}
	if !ran && len(problems) == 0 {
		problems = append(problems, fmt.Errorf("no image for this machine's platform %s/%s: cannot run `kustos version`", runtime.GOOS, runtime.GOARCH))
	}
	if err := errors.Join(problems...); err != nil {
		return err
	}
	d, _ := idx.Digest()
	fmt.Fprintf(stdout, "image check: %s (index %s): %v, user %s, entrypoint %s, labels, CA bundle: ok\n", o.Layout, d, seen, imageUser, entrypoint)
	return nil
}

// openIndex reads the one image index an OCI layout written by `image build` names.
func openIndex(dir string) (v1.ImageIndex, error) {
	idx, _, err := openLayout(dir)
	return idx, err
}

// openLayout reads the image index an OCI layout written by `image build` holds, and the tags
// it names it by: every entry of index.json is that one index, under its own ref.name.
func openLayout(dir string) (v1.ImageIndex, []string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not an OCI layout (run `make image`): %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, nil, err
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, nil, err
	}
	if len(im.Manifests) == 0 {
		return nil, nil, fmt.Errorf("%s/index.json names no image index", dir)
	}
	var tags []string
	for _, m := range im.Manifests {
		if !m.MediaType.IsIndex() || m.Digest != im.Manifests[0].Digest {
			return nil, nil, fmt.Errorf("%s/index.json: want one image index under each tag, found %s %s", dir, m.MediaType, m.Digest)
		}
		if t := m.Annotations[refName]; t != "" {
			tags = append(tags, t)
		}
	}
	idx, err := top.ImageIndex(im.Manifests[0].Digest)
	return idx, tags, err
}

// checkImage checks one platform's image and returns its /kustos (nil when missing).
func checkImage(img v1.Image, plat v1.Platform, o checkOptions) ([]byte, []error) {
	var problems []error
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, []error{err}
	}
	if cf.OS != plat.OS || cf.Architecture != plat.Architecture {
		problems = append(problems, fmt.Errorf("config is for %s/%s", cf.OS, cf.Architecture))
	}
	if cf.Config.User != imageUser {
		problems = append(problems, fmt.Errorf("user %q, want %q (non-root)", cf.Config.User, imageUser))
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{entrypoint}) {
		problems = append(problems, fmt.Errorf("entrypoint %q, want [%q]", cf.Config.Entrypoint, entrypoint))
	}
	if cf.Config.WorkingDir != "/" {
		problems = append(problems, fmt.Errorf("working directory %q, want /", cf.Config.WorkingDir))
	}
	for _, k := range []string{labelTitle, labelDescription, labelSource, labelCreated} {
		if cf.Config.Labels[k] == "" {
			problems = append(problems, fmt.Errorf("label %s is missing", k))
		}
	}
	if _, err := time.Parse(time.RFC3339, cf.Config.Labels[labelCreated]); err != nil {
		problems = append(problems, fmt.Errorf("label %s: %w", labelCreated, err))
	}
	for k, want := range map[string]string{labelVersion: o.Version, labelRevision: o.Commit} {
		if got := cf.Config.Labels[k]; got != want {
			problems = append(problems, fmt.Errorf("label %s=%q, want %q", k, got, want))
		}
	}

	files, err := flatten(img)
	if err != nil {
		return nil, append(problems, err)
	}
	if ca, ok := files["etc/ssl/certs/ca-certificates.crt"]; !ok || !x509.NewCertPool().AppendCertsFromPEM(ca.data) {
		problems = append(problems, errors.New("/etc/ssl/certs/ca-certificates.crt is missing or holds no certificate"))
	}
	if !hasLine(files["etc/passwd"].data, fmt.Sprintf("%s:x:%d:%d:", nonRootName, nonRootID, nonRootID)) {
		problems = append(problems, fmt.Errorf("/etc/passwd does not name user %d (%s)", nonRootID, nonRootName))
	}
	if !hasLine(files["etc/group"].data, fmt.Sprintf("%s:x:%d:", nonRootName, nonRootID)) {
		problems = append(problems, fmt.Errorf("/etc/group does not name group %d (%s)", nonRootID, nonRootName))
	}
	bin, ok := files[strings.TrimPrefix(entrypoint, "/")]
	if !ok || bin.mode&0o111 == 0 {
		return nil, append(problems, fmt.Errorf("%s is missing or not executable", entrypoint))
	}
	return bin.data, append(problems, checkBinary(bin.data, plat, o.Version)...)
}

// checkBinary reads the Go build information of the binary (the right platform, static: no
// cgo, no build paths, the time zones built in) and looks for the version stamped in.
func checkBinary(bin []byte, plat v1.Platform, version string) []error {
	bi, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		return []error{fmt.Errorf("%s: no Go build information: %w", entrypoint, err)}
	}
	var problems []error
	if bi.Path != mainPackage {
		problems = append(problems, fmt.Errorf("%s is %s, want %s", entrypoint, bi.Path, mainPackage))
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	for k, want := range map[string]string{"GOOS": plat.OS, "GOARCH": plat.Architecture, "CGO_ENABLED": "0", "-trimpath": "true", "-tags": buildTags} {
		if settings[k] != want {
			problems = append(problems, fmt.Errorf("%s built with %s=%q, want %q", entrypoint, k, settings[k], want))
		}
	}
	// -trimpath leaves -ldflags out of the build information; the string -X wrote is in the
	// binary's data.
	if !bytes.Contains(bin, []byte(version)) {
		problems = append(problems, fmt.Errorf("%s does not hold its version %q (-X buildinfo.version)", entrypoint, version))
	}
	return problems
}

// runVersion runs the image's binary as `kustos version`.
func runVersion(ctx context.Context, bin []byte, o checkOptions) (string, error) {
	dir, err := os.MkdirTemp("", "kustos-image-check-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "kustos")
	if err := os.WriteFile(path, bin, 0o700); err != nil { //nolint:gosec // G306: the binary under test must be executable (by us only)
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("/kustos version: %w\n%s", err, out)
	}
	if !strings.Contains(string(out), o.Version) {
		return "", fmt.Errorf("/kustos version printed %q, which does not name version %s", strings.TrimSpace(string(out)), o.Version)
	}
	// It must name the commit it was built from.
	if !strings.Contains(string(out), "commit "+o.Commit) {
		return "", fmt.Errorf("/kustos version printed %q, which does not name commit %s", strings.TrimSpace(string(out)), o.Commit)
	}
	return string(out), nil
}

type file struct {
	mode int64
	data []byte
}

// flatten reads the image's file system as a container runtime would unpack it.
func flatten(img v1.Image) (map[string]file, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading the image's files: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[strings.TrimPrefix(h.Name, "/")] = file{mode: h.Mode, data: b}
	}
}

func hasLine(b []byte, prefix string) bool {
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}
