package submit_test

import (
	"context"
	"crypto/sha256"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/kustos-dev/kustos/internal/submit"
	"github.com/kustos-dev/kustos/internal/submit/submittest"
)

// sparseDir is a directory holding one sparse file of size bytes: a disk image whose reads
// cost no disk, so the figures are the archive's, the hash's and the upload's.
func sparseDir(b *testing.B, size int64) *os.Root {
	b.Helper()
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "disk.img"))
	if err != nil {
		b.Fatal(err)
	}
	f.Close()
	if err := os.Truncate(f.Name(), size); err != nil {
		b.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { root.Close() })
	return root
}

// BenchmarkArchiveSHA256 is the first of an upload's costs: writing the archive of a 1 GiB
// disk image and hashing it.
func BenchmarkArchiveSHA256(b *testing.B) {
	const size = 1 << 30
	root := sparseDir(b, size)
	b.SetBytes(size)
	for b.Loop() {
		h := sha256.New()
		if err := submit.Archive(root, h, func(submit.Skip) {}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpload is a whole submission of a 1 GiB disk image over loopback to the reference
// server, which hashes and discards it (both ends on the same cores).
func BenchmarkUpload(b *testing.B) {
	const size = 1 << 30
	root := sparseDir(b, size)
	s, err := submittest.Start(submittest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	to, _ := url.Parse(s.URL())
	c := &submit.Client{Name: "bench"}
	b.SetBytes(size)
	for b.Loop() {
		if _, err := c.Upload(context.Background(), to, func(w io.Writer) error { return submit.Archive(root, w, func(submit.Skip) {}) }); err != nil {
			b.Fatal(err)
		}
	}
}
