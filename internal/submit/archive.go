package submit

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// Skip is an entry of the directory that is not in the archive, and why.
type Skip struct {
	Path   string `json:"skipped"`
	Reason string `json:"reason"`
}

// copyBuffer is the size of the buffer a file is copied through: reads of 1 MiB keep a disk
// busy without holding more than that of it in memory.
const copyBuffer = 1 << 20

// Archive writes the tree under root to w as a ZIP and reports every entry it leaves out to
// skip. The bytes depend only on the tree (names, modes, mtimes, contents), so that writing it
// again after a cut gives the same stream, which is what lets an upload resume:
//
//   - each directory's entries in byte order of their names, whatever order the file system
//     lists them in, a directory before what it holds, each directory as an entry of its own
//     (so an empty one survives);
//   - every entry stored (Store, no compression): the archive's bytes do not depend on a
//     compressor's version, a disk image costs no CPU to pack, and its size is the tree's plus
//     a few dozen bytes an entry;
//   - the time of each entry is its file's mtime in UTC, its mode the file's permission bits.
//
// Only regular files and directories are archived, and none whose name holds a backslash
// (skipped: extractors on Windows split names there). A symbolic link is never followed (it is
// skipped, wherever it points), nor are device files, named pipes or sockets opened; every
// open goes through an os.Root, so nothing outside root is ever read even when a file is
// swapped for a link while the archive is written. A file or directory that cannot be read is
// skipped with the reason; an error writing to w ends the archive.
func Archive(root *os.Root, w io.Writer, skip func(Skip)) error {
	zw := zip.NewWriter(w)
	buf := make([]byte, copyBuffer)
	if err := archiveDir(root, zw, ".", "", buf, skip); err != nil {
		return err
	}
	return zw.Close()
}

// archiveDir writes the entries of dir (rel, "" for root itself, as the archive names it).
func archiveDir(root *os.Root, zw *zip.Writer, dir, rel string, buf []byte, skip func(Skip)) error {
	f, err := root.Open(dir)
	if err != nil {
		skip(Skip{Path: rel + "/", Reason: "cannot open the directory: " + reason(err)})
		return nil
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		skip(Skip{Path: rel + "/", Reason: "cannot read the directory: " + reason(err)})
		return nil
	}
	// A directory is read in the file system's order (creation order, a hash), not by name: the
	// same tree made in another order must give the same archive.
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		name := path.Join(rel, e.Name())
		fsPath := path.Join(dir, e.Name())
		if strings.Contains(e.Name(), `\`) {
			// A ZIP entry name separates with "/" only, but extractors on Windows also split at
			// "\": `a\..\..\x` would be written outside the folder it is extracted to there.
			skip(Skip{Path: name, Reason: `a name with "\", which extractors on Windows read as a path separator`})
			continue
		}
		switch t := e.Type(); {
		case t.IsDir():
			info, err := root.Lstat(fsPath)
			if err != nil {
				skip(Skip{Path: name + "/", Reason: reason(err)})
				continue
			}
			if !info.IsDir() {
				skip(Skip{Path: name + "/", Reason: "changed while the archive was written"})
				continue
			}
			if _, err := zw.CreateHeader(header(name+"/", info)); err != nil {
				return err
			}
			if err := archiveDir(root, zw, fsPath, name, buf, skip); err != nil {
				return err
			}
		case t.IsRegular():
			if err := archiveFile(root, zw, fsPath, name, buf, skip); err != nil {
				return err
			}
		case t&fs.ModeSymlink != 0:
			skip(Skip{Path: name, Reason: "a symbolic link, not followed"})
		default:
			skip(Skip{Path: name, Reason: "not a regular file or directory (" + kind(t) + ")"})
		}
	}
	return nil
}

// archiveFile writes the regular file fsPath as the entry name. Errors reading it skip it;
// errors writing the archive are returned.
func archiveFile(root *os.Root, zw *zip.Writer, fsPath, name string, buf []byte, skip func(Skip)) error {
	info, err := root.Lstat(fsPath)
	if err != nil {
		skip(Skip{Path: name, Reason: reason(err)})
		return nil
	}
	if !info.Mode().IsRegular() {
		skip(Skip{Path: name, Reason: "changed while the archive was written"})
		return nil
	}
	f, err := root.OpenFile(fsPath, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		skip(Skip{Path: name, Reason: "cannot open: " + reason(err)})
		return nil
	}
	defer f.Close()
	// The file opened must be the one looked at: a link swapped in meanwhile is not followed.
	if opened, err := f.Stat(); err != nil || !os.SameFile(info, opened) {
		skip(Skip{Path: name, Reason: "changed while the archive was written"})
		return nil
	}
	w, err := zw.CreateHeader(header(name, info))
	if err != nil {
		return err
	}
	// A read error after the header is written cannot be skipped any more: the entry is in
	// the stream. It ends the archive, naming the file.
	if _, err := io.CopyBuffer(markWrites{w}, onlyReader{f}, buf); err != nil {
		var we writeError
		if errors.As(err, &we) {
			return we.err
		}
		return fmt.Errorf("reading %s: %w", name, err)
	}
	return nil
}

// header is the deterministic ZIP header of an entry.
func header(name string, info fs.FileInfo) *zip.FileHeader {
	h := &zip.FileHeader{Name: name, Method: zip.Store, Modified: info.ModTime().UTC()}
	mode := info.Mode().Perm()
	if info.IsDir() {
		mode |= fs.ModeDir
	}
	h.SetMode(mode)
	return h
}

// onlyReader hides *os.File's WriterTo/ReaderFrom paths so that io.CopyBuffer uses buf, and
// tells read errors from write errors.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// markWrites wraps the errors of w in writeError.
type markWrites struct{ w io.Writer }

func (m markWrites) Write(p []byte) (int, error) {
	n, err := m.w.Write(p)
	if err != nil {
		err = writeError{err}
	}
	return n, err
}

// writeError marks an error of the archive's writer (not of a file read).
type writeError struct{ err error }

func (e writeError) Error() string { return e.err.Error() }

func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func kind(t fs.FileMode) string {
	switch {
	case t&fs.ModeDevice != 0 && t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	default:
		return "an irregular file"
	}
}
