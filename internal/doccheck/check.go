package doccheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
)

// Problem is one thing wrong with the documentation, at a file (slash-separated, relative to
// the repository root) and line.
type Problem struct {
	File string
	Line int
	What string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.What) }

// Rules are what Check holds the documentation to.
type Rules struct {
	// MaxREADMELines is the most lines README.md may have; 0 sets no limit.
	MaxREADMELines int
	// Pending lists files (relative to the root, slash-separated) that are linked to before
	// they exist: a link to one is not checked further.
	Pending map[string]bool
	// Forbidden are texts user documentation must not hold anywhere, code included.
	Forbidden []Forbidden
}

// Forbidden is a text user documentation must not hold, and why.
type Forbidden struct {
	Pattern *regexp.Regexp
	Why     string
	// Except, when set, matches the legitimate uses of the text: a match of Pattern that lies
	// inside a match of Except on the same line is no problem.
	Except *regexp.Regexp
}

// find returns the first match of f.Pattern in line that no match of f.Except covers, or "".
func (f Forbidden) find(line string) string {
	var excused [][]int
	if f.Except != nil {
		excused = f.Except.FindAllStringIndex(line, -1)
	}
next:
	for _, m := range f.Pattern.FindAllStringIndex(line, -1) {
		for _, e := range excused {
			if e[0] <= m[0] && m[1] <= e[1] {
				continue next
			}
		}
		return line[m[0]:m[1]]
	}
	return ""
}

// Files returns README.md, CHANGELOG.md if there is one, and every Markdown file under docs/
// of the repository at root, slash-separated and sorted.
func Files(root string) ([]string, error) {
	files := []string{"README.md"}
	if _, err := os.Stat(filepath.Join(root, "CHANGELOG.md")); err == nil {
		files = append(files, "CHANGELOG.md")
	}
	top := len(files)
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing docs: %w", err)
	}
	sort.Strings(files[top:])
	return files, nil
}

// Check checks the documentation files (see Files) of the repository at root: every relative
// link names a file or directory inside the repository, every #anchor a heading of the
// Markdown file it points into, nothing links outside the repository (no URL, no path leaving
// it), no forbidden text, no paragraph run into a table above it, and README.md is within its
// length.
func Check(root string, files []string, rules Rules) ([]Problem, error) {
	var problems []Problem
	anchors := map[string]map[string]bool{}
	anchorsOf := func(file string) (map[string]bool, error) {
		if a, ok := anchors[file]; ok {
			return a, nil
		}
		md, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		anchors[file] = Anchors(md)
		return anchors[file], nil
	}
	for _, file := range files {
		md, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		if file == "README.md" && rules.MaxREADMELines > 0 {
			if n := strings.Count(string(md), "\n"); n > rules.MaxREADMELines {
				problems = append(problems, Problem{file, n, fmt.Sprintf("README.md has %d lines, more than %d: move reference material into docs/", n, rules.MaxREADMELines)})
			}
		}
		for i, line := range strings.Split(string(md), "\n") {
			for _, f := range rules.Forbidden {
				if w := f.find(line); w != "" {
					problems = append(problems, Problem{file, i + 1, fmt.Sprintf("%q: %s", w, f.Why)})
				}
			}
		}
		for _, n := range TableRunOns(md) {
			problems = append(problems, Problem{file, n, "this line follows a table without a blank line, and renders as a row of it: put a blank line after the table"})
		}
		for _, l := range Links(md) {
			what, err := checkLink(root, file, l.Target, rules.Pending, anchorsOf)
			if err != nil {
				return nil, err
			}
			if what != "" {
				problems = append(problems, Problem{file, l.Line, what})
			}
		}
	}
	return problems, nil
}

// checkLink says what is wrong with target, linked from file, or "" when nothing is.
func checkLink(root, file, target string, pending map[string]bool, anchorsOf func(string) (map[string]bool, error)) (string, error) {
	if target == "" {
		return "an empty link target", nil
	}
	if isExternal(target) {
		return fmt.Sprintf("%s links outside the repository", target), nil
	}
	p, anchor, _ := strings.Cut(target, "#")
	dest := file
	if p != "" {
		if strings.HasPrefix(p, "/") {
			return fmt.Sprintf("%s: an absolute path; link relative to %s", target, file), nil
		}
		dest = path.Clean(path.Join(path.Dir(file), p))
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return fmt.Sprintf("%s leaves the repository", target), nil
		}
		if pending[dest] {
			return "", nil
		}
		switch _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR): // a/b where a is a file
			return fmt.Sprintf("%s: no such file in the repository (%s)", target, dest), nil
		case err != nil:
			return "", fmt.Errorf("checking %s, linked from %s: %w", target, file, err)
		}
	}
	if anchor == "" {
		return "", nil
	}
	if !strings.HasSuffix(dest, ".md") {
		return fmt.Sprintf("%s: an anchor into %s, which is no Markdown file whose headings can be checked", target, dest), nil
	}
	a, err := anchorsOf(dest)
	if err != nil {
		return "", err
	}
	if !a[anchor] {
		return fmt.Sprintf("%s: %s has no heading with the anchor #%s", target, dest, anchor), nil
	}
	return "", nil
}

// scheme matches a URL scheme ("https:", "mailto:") at the start of a link target.
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

func isExternal(target string) bool {
	return scheme.MatchString(target) || strings.HasPrefix(target, "//") ||
		strings.HasPrefix(strings.ToLower(target), "www.") || strings.Contains(target, "@")
}
