package submit_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/submit"
	"github.com/kustos-dev/kustos/internal/submit/submittest"
)

// MakeTree writes a small exam volume under dir: nested directories, an empty one, modes and
// mtimes of their own, and returns what the archive must hold (path → contents; a directory
// ends in "/").
func makeTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	want := map[string]string{
		"README.md":             "# exam\n",
		"src/":                  "",
		"src/main.go":           "package main\n",
		"src/lib/":              "",
		"src/lib/util.go":       strings.Repeat("x", 3<<20), // more than one copy buffer
		"empty/":                "",
		"data/":                 "",
		"data/answers.txt":      "42\n",
		"data/zero-length.bin":  "",
		"with space & ü.txt":    "unicode names survive\n",
		"src/lib/.hidden":       "dot files too\n",
		"src/lib/executable.sh": "#!/bin/sh\n",
	}
	submittest.WriteTree(t, dir, want)
	if err := os.Chmod(filepath.Join(dir, "src", "lib", "executable.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2024, 6, 1, 12, 30, 0, 0, time.UTC)
	for name := range want {
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(name)), mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	return want
}

// TestArchiveRoundTrip: what archive/zip reads back from the archive is the tree — every file
// with its contents, mode and mtime, every directory, the empty one too — and a link pointing
// outside the directory, a link inside it and a named pipe are skipped and named, never read.
func TestArchiveRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := makeTree(t, dir)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("another tenant's secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "data", "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(dir, "rootfs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("answers.txt", filepath.Join(dir, "data", "inside")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	var skipped []submit.Skip
	archive(t, dir, &buf, func(s submit.Skip) { skipped = append(skipped, s) })
	if bytes.Contains(buf.Bytes(), []byte("another tenant's secret")) {
		t.Fatal("the archive holds the file a link outside the directory points to")
	}
	got := readZip(t, buf.Bytes())
	for name, content := range want {
		e, ok := got[name]
		if !ok {
			t.Errorf("%s is not in the archive", name)
			continue
		}
		if e.content != content {
			t.Errorf("%s: %d bytes, want %d", name, len(e.content), len(content))
		}
		// (The links made after makeTree moved the directories' mtimes; files keep theirs.)
		if !strings.HasSuffix(name, "/") && !e.modified.Equal(time.Date(2024, 6, 1, 12, 30, 0, 0, time.UTC)) {
			t.Errorf("%s: modified %s, want the file's mtime", name, e.modified)
		}
		delete(got, name)
	}
	for name := range got {
		t.Errorf("the archive holds %s, which is not a file or directory of the tree", name)
	}
	if m := readZip(t, buf.Bytes())["src/lib/executable.sh"].mode; m != 0o755 {
		t.Errorf("executable.sh: mode %v, want 0755", m)
	}
	wantSkipped := map[string]string{
		"data/escape": "a symbolic link, not followed",
		"data/inside": "a symbolic link, not followed",
		"rootfs":      "a symbolic link, not followed",
		"pipe":        "not a regular file or directory (a named pipe)",
	}
	for _, s := range skipped {
		if wantSkipped[s.Path] != s.Reason {
			t.Errorf("skipped %s (%s), want %q", s.Path, s.Reason, wantSkipped[s.Path])
		}
		delete(wantSkipped, s.Path)
	}
	for p := range wantSkipped {
		t.Errorf("%s was not reported as skipped", p)
	}
}

// TestArchiveDeterministic: two archives of one tree are the same bytes (what a resume relies
// on), and a changed mtime changes them.
func TestArchiveDeterministic(t *testing.T) {
	dir := t.TempDir()
	makeTree(t, dir)
	var a, b bytes.Buffer
	archive(t, dir, &a, func(submit.Skip) {})
	archive(t, dir, &b, func(submit.Skip) {})
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two archives of the same tree differ")
	}
	later := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "README.md"), later, later); err != nil {
		t.Fatal(err)
	}
	var c bytes.Buffer
	archive(t, dir, &c, func(submit.Skip) {})
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("a changed mtime left the archive as it was")
	}
}

// TestArchiveUnreadable: a file the archive cannot open is skipped with the reason, and the
// rest is archived.
func TestArchiveUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode") // the test runs as an ordinary user in make test
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "locked.txt"), []byte("b"), 0o000); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	var skipped []submit.Skip
	archive(t, dir, &buf, func(s submit.Skip) { skipped = append(skipped, s) })
	if len(skipped) != 1 || skipped[0].Path != "locked.txt" || !strings.Contains(skipped[0].Reason, "permission denied") {
		t.Errorf("skipped %+v, want locked.txt: permission denied", skipped)
	}
	if _, ok := readZip(t, buf.Bytes())["a.txt"]; !ok {
		t.Error("a.txt is not in the archive")
	}
}

func archive(t *testing.T, dir string, w io.Writer, skip func(submit.Skip)) {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := submit.Archive(root, w, skip); err != nil {
		t.Fatal(err)
	}
}

type entry struct {
	content  string
	modified time.Time
	mode     fs.FileMode
}

func readZip(t *testing.T, data []byte) map[string]entry {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]entry{}
	for _, f := range zr.File {
		if f.Method != zip.Store {
			t.Errorf("%s: method %d, want Store", f.Name, f.Method)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc) // checks the CRC-32 too
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		out[f.Name] = entry{content: string(b), modified: f.Modified.UTC(), mode: f.Mode().Perm()}
	}
	return out
}

// TestArchiveCreationOrder: one tree made in two creation orders gives the same bytes, with
// each directory's entries sorted by name and a directory before what it holds. A file system
// lists a directory in its own order (creation order, a hash of the name), which must not
// reach the archive: a resumed upload writes the archive again, perhaps from a restored copy.
func TestArchiveCreationOrder(t *testing.T) {
	var names []string
	for i := range 40 {
		names = append(names, fmt.Sprintf("f%02d.txt", (i*17)%40), fmt.Sprintf("d%02d/x.txt", (i*7)%40))
	}
	names = append(names, "a-b.txt", "a/z.txt", "B.txt")
	mtime := time.Date(2024, 6, 1, 12, 30, 0, 0, time.UTC)
	build := func(order []string) string {
		dir := t.TempDir()
		for _, n := range order {
			submittest.WriteTree(t, dir, map[string]string{n: "content of " + n})
		}
		// Every mtime, directories' last: creating their entries changed them.
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			return os.Chtimes(p, mtime, mtime)
		})
		if err != nil {
			t.Fatal(err)
		}
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() || p == dir {
				return err
			}
			return os.Chtimes(p, mtime, mtime)
		})
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	reversed := slices.Clone(names)
	slices.Reverse(reversed)
	var a, b bytes.Buffer
	archive(t, build(names), &a, func(s submit.Skip) { t.Errorf("skipped %v", s) })
	archive(t, build(reversed), &b, func(s submit.Skip) { t.Errorf("skipped %v", s) })
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("the same tree made in two orders gives two archives:\n%v\n%v", entryNames(t, a.Bytes()), entryNames(t, b.Bytes()))
	}
	got := entryNames(t, a.Bytes())
	if want := []string{"B.txt", "a/", "a/z.txt", "a-b.txt", "d00/", "d00/x.txt"}; !slices.Equal(got[:len(want)], want) {
		t.Errorf("entries begin %v, want %v", got[:len(want)], want)
	}
}

// TestArchiveBackslash: a name holding a backslash, which a Windows extractor splits into a
// path (`..\..\x` leaves the folder it extracts to), is skipped and reported, a directory with
// what it holds; the rest is archived.
func TestArchiveBackslash(t *testing.T) {
	dir := t.TempDir()
	submittest.WriteTree(t, dir, map[string]string{
		`..\..\evil.bat`:    "echo",
		`sub\dir/inner.txt`: "inside",
		"ok.txt":            "fine",
	})
	var skipped []string
	var buf bytes.Buffer
	archive(t, dir, &buf, func(s submit.Skip) {
		if !strings.Contains(s.Reason, "path separator") {
			t.Errorf("skip %q: reason %q does not say why", s.Path, s.Reason)
		}
		skipped = append(skipped, s.Path)
	})
	if got, want := entryNames(t, buf.Bytes()), []string{"ok.txt"}; !slices.Equal(got, want) {
		t.Errorf("archived %q, want %q", got, want)
	}
	slices.Sort(skipped)
	if want := []string{`..\..\evil.bat`, `sub\dir`}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %q, want %q", skipped, want)
	}
}

func entryNames(t *testing.T, b []byte) []string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range zr.File {
		out = append(out, f.Name)
	}
	return out
}
