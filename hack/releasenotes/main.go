package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// Errors of section.
var (
	errNoSection    = errors.New("no section")
	errEmptySection = errors.New("empty section")
)

func main() {
	changelog := flag.String("changelog", "CHANGELOG.md", "the changelog")
	version := flag.String("version", "", "the release's version, e.g. 0.2.0 (a leading v, as in the tag, is dropped)")
	linkBase := flag.String("link-base", "", "prefix of relative links, e.g. https://github.com/<owner>/<repo>/blob/<tag>/ (empty: left as they are)")
	out := flag.String("o", "", "output file (empty: stdout)")
	flag.Parse()
	if err := run(*changelog, *version, *linkBase, *out); err != nil {
		fmt.Fprintln(os.Stderr, "releasenotes:", err)
		os.Exit(1)
	}
}

func run(changelog, version, linkBase, out string) error {
	if version == "" {
		return errors.New("-version is required")
	}
	md, err := os.ReadFile(changelog)
	if err != nil {
		return err
	}
	notes, err := section(md, version)
	if err != nil {
		return fmt.Errorf("%s: %w", changelog, err)
	}
	notes = absoluteLinks(notes, linkBase)
	var w io.Writer = os.Stdout
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	_, err = io.WriteString(w, notes)
	return err
}

// section returns the body of version's section of the changelog md, without its heading and
// without the blank lines around it, ending in a newline.
func section(md []byte, version string) (string, error) {
	version = strings.TrimPrefix(version, "v")
	heading := "## [" + version + "]"
	var body []string
	in, found := false, false
	fence := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(line, "## ") {
			if in {
				break
			}
			// "## [0.2.0]" or "## [0.2.0] - 2026-12-01", not "## [0.2.0-rc.1]".
			if rest, ok := strings.CutPrefix(line, heading); ok && (strings.TrimSpace(rest) == "" || strings.HasPrefix(rest, " - ")) {
				in, found = true, true
			}
			continue
		}
		if in {
			body = append(body, line)
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("%w %q: add the release's section before tagging it", errNoSection, heading)
	}
	text := strings.Trim(strings.Join(body, "\n"), "\n \t")
	if text == "" {
		return "", fmt.Errorf("%w %q: say what the release changes", errEmptySection, heading)
	}
	return text + "\n", nil
}

// link matches an inline link's target: "](target" up to a space, ")" or "#" is kept whole.
var link = regexp.MustCompile(`\]\(([^)\s]+)`)

// scheme matches a target that is a URL already ("https:", "mailto:").
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// absoluteLinks puts base in front of every relative link target of md that is not an anchor
// into the notes themselves.
func absoluteLinks(md, base string) string {
	if base == "" {
		return md
	}
	return link.ReplaceAllStringFunc(md, func(m string) string {
		target := m[2:]
		if scheme.MatchString(target) || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "/") {
			return m
		}
		return "](" + strings.TrimSuffix(base, "/") + "/" + strings.TrimPrefix(target, "./")
	})
}
