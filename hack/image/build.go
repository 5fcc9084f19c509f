package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// defaultCAFile is where Debian's ca-certificates package puts the bundle Go's crypto/x509 reads
// on Linux; the image carries it at the same path.
const defaultCAFile = "/etc/ssl/certs/ca-certificates.crt"

// The user the image runs as: not root, with the number and name distroless and the chart's
// securityContext (runAsUser/runAsGroup 65532) use.
const (
	nonRootID   = 65532
	nonRootName = "nonroot"
	imageUser   = "65532:65532"
	entrypoint  = "/kustos"
	mainPackage = "github.com/kustos-dev/kustos/cmd/kustos"
)

// platforms the index holds, in this order.
var platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// OCI annotation keys (image-spec annotations.md), used as config labels and on the index.
const (
	labelTitle       = "org.opencontainers.image.title"
	labelDescription = "org.opencontainers.image.description"
	labelSource      = "org.opencontainers.image.source"
	labelVersion     = "org.opencontainers.image.version"
	labelRevision    = "org.opencontainers.image.revision"
	labelCreated     = "org.opencontainers.image.created"
	refName          = "org.opencontainers.image.ref.name"
)

// description names all four detectors: registries show it as what the image is. There is no
// license file in the repository, so there is no org.opencontainers.image.licenses label.
const description = "Kustos keeps a GitOps-managed, multi-tenant Kubernetes cluster tidy by proposing changes " +
	"to Git: ResourceQuota increases, expiring workloads and namespaces, inactive environments, " +
	"and Cleaner-scheduled deletions, as Events in observer mode or as pull requests."

const source = "https://github.com/kustos-dev/kustos"

type buildOptions struct {
	Repo, Out       string
	Version, Commit string
	Tags            []string  // what the layout names the index by; default: Version
	Created         time.Time // SOURCE_DATE_EPOCH
	CAFile          string
}

// build compiles cmd/kustos for every platform and writes the image index to o.Out.
func build(ctx context.Context, o buildOptions, log io.Writer) error {
	if o.Version == "" || o.Commit == "" {
		return errors.New("--version and --commit are required (make image sets them from git)")
	}
	ca, err := readCABundle(o.CAFile)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "kustos-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	in := imageInputs{CA: ca, Version: o.Version, Commit: o.Commit, Created: o.Created, Binaries: map[string][]byte{}}
	for _, p := range platforms {
		out := filepath.Join(tmp, "kustos-"+p.OS+"-"+p.Architecture)
		fmt.Fprintf(log, "image build: go build %s for %s/%s\n", mainPackage, p.OS, p.Architecture)
		if err := goBuild(ctx, o.Repo, p, ldflags(o.Version, o.Commit, o.Created), out); err != nil {
			return err
		}
		if in.Binaries[p.Architecture], err = os.ReadFile(out); err != nil {
			return err
		}
	}
	idx, err := assemble(in)
	if err != nil {
		return err
	}
	tags := o.Tags
	if len(tags) == 0 {
		tags = []string{o.Version}
	}
	if err := writeLayout(o.Out, idx, tags); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "image build: wrote %s (index %s)\n", o.Out, d)
	return nil
}

// stampPackage holds the version, commit and date variables `kustos version` prints and
// kustos_build_info reports (the Makefile's build target stamps the same ones).
const stampPackage = "github.com/kustos-dev/kustos/internal/buildinfo"

// ldflags stamps the version, the commit and the date (the commit time, RFC 3339, so the binary
// is reproducible too). -s -w drop the symbol table and DWARF; the build information `image
// check` reads stays.
func ldflags(version, commit string, date time.Time) string {
	flags := []string{"-s", "-w"}
	flags = append(flags, "-X", stampPackage+".version="+version, "-X", stampPackage+".commit="+commit,
		"-X", stampPackage+".date="+date.UTC().Format(time.RFC3339))
	return strings.Join(flags, " ")
}

// buildTags embeds the time zone database in the binary: the image has no /usr/share/zoneinfo,
// and a Cleaner's CEL condition may name a zone (time.getHours("Europe/Rome")).
const buildTags = "timetzdata"

// goBuild builds a static binary: no cgo (the image has no libc), no file system paths
// (-trimpath), no VCS stamp (a worktree's .git may be a file or absent in CI; the commit is in
// the ldflags), the time zones built in.
func goBuild(ctx context.Context, repo string, p v1.Platform, ldflags, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-tags", buildTags, "-ldflags", ldflags, "-o", out, "./cmd/kustos")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s/%s: %w\n%s", p.OS, p.Architecture, err, stderr.String())
	}
	return nil
}

// readCABundle reads the build machine's CA bundle and refuses one without a certificate.
func readCABundle(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("CA bundle %s is missing: install Debian's ca-certificates package (apt-get install ca-certificates) or pass --ca-file", path)
	} else if err != nil {
		return nil, fmt.Errorf("CA bundle: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA bundle %s holds no PEM certificate", path)
	}
	return b, nil
}

// imageInputs is everything an image is made of; equal inputs give equal digests.
type imageInputs struct {
	CA              []byte
	Binaries        map[string][]byte // by GOARCH
	Version, Commit string
	Created         time.Time
}

func (in imageInputs) labels() map[string]string {
	return map[string]string{
		labelTitle:       "kustos",
		labelDescription: description,
		labelSource:      source,
		labelVersion:     in.Version,
		labelRevision:    in.Commit,
		labelCreated:     in.Created.UTC().Format(time.RFC3339),
	}
}

// passwd and group name root and the non-root user, so that tools (and Go's os/user) resolve
// the image's user by name.
var (
	passwd = fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/home/%s:/sbin/nologin\n", nonRootName, nonRootID, nonRootID, nonRootName, nonRootName)
	group  = fmt.Sprintf("root:x:0:\n%s:x:%d:\n", nonRootName, nonRootID)
)

// assemble makes one image per platform, each of two layers (the base files, the binary), and
// the index over them.
func assemble(in imageInputs) (v1.ImageIndex, error) {
	base, err := layer(in.Created, []tarEntry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: in.CA},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/" + nonRootName + "/", mode: 0o700, dir: true, uid: nonRootID},
		{name: "tmp/", mode: 0o1777, dir: true},
	})
	if err != nil {
		return nil, err
	}
	labels := in.labels()
	created := v1.Time{Time: in.Created.UTC()}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		bin, ok := in.Binaries[p.Architecture]
		if !ok {
			return nil, fmt.Errorf("no binary for %s/%s", p.OS, p.Architecture)
		}
		binLayer, err := layer(in.Created, []tarEntry{{name: "kustos", mode: 0o755, data: bin}})
		if err != nil {
			return nil, err
		}
		img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		img, err = mutate.Append(img,
			mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "kustos image build: CA certificates, /etc/passwd and /etc/group (user 65532 nonroot)"}},
			mutate.Addendum{Layer: binLayer, History: v1.History{Created: created, CreatedBy: "kustos image build: /kustos " + in.Version}},
		)
		if err != nil {
			return nil, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture, cf.Created = p.OS, p.Architecture, created
		cf.Config = v1.Config{User: imageUser, Entrypoint: []string{entrypoint}, WorkingDir: "/", Labels: labels}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return nil, err
		}
		plat := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &plat}})
	}
	return mutate.Annotations(idx, labels).(v1.ImageIndex), nil
}

type tarEntry struct {
	name string
	mode int64
	dir  bool
	uid  int
	data []byte
}

// layer writes entries into a tar with fixed times and numeric owners only, gzipped by
// go-containerregistry (deterministic for one Go version).
func layer(mtime time.Time, entries []tarEntry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: mtime.UTC(), Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// writeLayout replaces dir with an OCI layout whose index.json names idx by each of tags: one
// entry per tag, all the same index, each with its org.opencontainers.image.ref.name, which is
// how an OCI layout names tags (`image push` to a repository pushes them all). It checks the
// tags before it touches dir, and refuses to remove a directory that is not an OCI layout, so a
// wrong --out cannot delete a tree.
func writeLayout(dir string, idx v1.ImageIndex, tags []string) error {
	var unique []string
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if _, err := name.NewTag("example.com/kustos:"+t, name.StrictValidation); err != nil || t == "" {
			return fmt.Errorf("--tag=%q: not an image tag (letters, digits, '_', '.', '-'; at most 128)", t)
		}
		if !slices.Contains(unique, t) {
			unique = append(unique, t)
		}
	}
	if len(unique) == 0 {
		return errors.New("--tag is required: the layout must name the image (make image gives the chart's appVersion and the version)")
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
			return fmt.Errorf("--out=%s exists and is not an OCI layout; not replacing it", dir)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, t := range unique {
		if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refName: t})); err != nil {
			return err
		}
	}
	return nil
}
