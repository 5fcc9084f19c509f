package doccheck

import (
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// GoFiles returns every .go file of the repository at root, tests included, slash-separated and
// sorted. Directories named testdata or vendor, and hidden ones, are left out: they hold inputs
// and other people's code, not Kustos's.
func GoFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing Go files: %w", err)
	}
	sort.Strings(files)
	return files, nil
}

// CheckComments reports each forbidden text in the comments of the Go files (see GoFiles) of the
// repository at root, one Problem per comment line and pattern. Only comments are read: an
// identifier or a string literal that holds the text is code, and is no citation.
func CheckComments(root string, files []string, forbidden []Forbidden) ([]Problem, error) {
	var problems []Problem
	for _, file := range files {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		fset := token.NewFileSet()
		tf := fset.AddFile(file, fset.Base(), len(src))
		var errs scanner.ErrorList
		var s scanner.Scanner
		s.Init(tf, src, errs.Add, scanner.ScanComments)
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok != token.COMMENT {
				continue
			}
			first := fset.Position(pos).Line
			for i, line := range strings.Split(lit, "\n") {
				for _, f := range forbidden {
					if w := f.find(line); w != "" {
						problems = append(problems, Problem{file, first + i, fmt.Sprintf("%q: %s", w, f.Why)})
					}
				}
			}
		}
		if err := errs.Err(); err != nil {
			return nil, fmt.Errorf("scanning %s: %w", file, err)
		}
	}
	return problems, nil
}
