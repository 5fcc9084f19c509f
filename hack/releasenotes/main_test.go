package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const changelog = `# Changelog

Intro with a [link](docs/upgrading.md).

## [Unreleased]

### Added

- Something new.

## [0.2.0] - 2026-12-01

What changes: [Upgrading](docs/upgrading.md#upgrading-to-020).

### Fixed

- A bug ([details](./docs/x.md), [web](https://example.com/a), [here](#fixed)).

` + "```md\n## [0.1.0] inside a fence is text\n```" + `

## [0.2.0-rc.1] - 2026-11-30

- The candidate.

## [0.1.1]

## [0.1.0] - 2026-11-27

The first.
`

func TestSection(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		base          string
		want          string
		wantErr       error
	}{
		{name: "dated section up to the next; a fenced heading is text", version: "0.2.0", want: "What changes: [Upgrading](docs/upgrading.md#upgrading-to-020).\n\n### Fixed\n\n" +
			"- A bug ([details](./docs/x.md), [web](https://example.com/a), [here](#fixed)).\n\n```md\n## [0.1.0] inside a fence is text\n```\n"},
		{name: "the tag's v is dropped", version: "v0.1.0", want: "The first.\n"},
		{name: "a pre-release is its own section", version: "0.2.0-rc.1", want: "- The candidate.\n"},
		{name: "unreleased", version: "Unreleased", want: "### Added\n\n- Something new.\n"},
		{name: "relative links made absolute", version: "0.2.0", base: "https://github.com/o/r/blob/v0.2.0/",
			want: "What changes: [Upgrading](https://github.com/o/r/blob/v0.2.0/docs/upgrading.md#upgrading-to-020).\n\n### Fixed\n\n" +
				"- A bug ([details](https://github.com/o/r/blob/v0.2.0/docs/x.md), [web](https://example.com/a), [here](#fixed)).\n\n```md\n## [0.1.0] inside a fence is text\n```\n"},
		{name: "no section", version: "0.3.0", wantErr: errNoSection},
		{name: "a prefix of another version is not it", version: "0.2", wantErr: errNoSection},
		{name: "empty section", version: "0.1.1", wantErr: errEmptySection},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := section([]byte(changelog), tc.version)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got = absoluteLinks(got, tc.base); got != tc.want {
				t.Errorf("notes:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestRepositoryChangelog: the repository's CHANGELOG.md has the sections a release reads, and
// run writes one to a file.
func TestRepositoryChangelog(t *testing.T) {
	path := filepath.Join("..", "..", "CHANGELOG.md")
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"Unreleased", "0.1.0"} {
		if _, err := section(md, v); err != nil {
			t.Errorf("CHANGELOG.md, section %s: %v", v, err)
		}
	}
	out := filepath.Join(t.TempDir(), "notes.md")
	if err := run(path, "v0.1.0", "https://github.com/kustos-dev/kustos/blob/v0.1.0/", out); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(notes), "](https://github.com/kustos-dev/kustos/blob/v0.1.0/docs/upgrading.md#") {
		t.Errorf("the 0.1.0 notes' link to docs/upgrading.md is not absolute:\n%s", notes)
	}
	if err := run(path, "", "", out); err == nil {
		t.Error("run without -version succeeded")
	}
}
