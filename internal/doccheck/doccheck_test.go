package doccheck

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// forbidden: project jargon a user does not know, and the project's shared folder, which is
// not part of the repository (named in code or prose, not only as a link).
var forbidden = []Forbidden{
	{Pattern: regexp.MustCompile(`(?i)seed`), Why: "project jargon; say what is meant (the design, the example, the convention)"},
	{Pattern: regexp.MustCompile(`(?i)\.\./shared\b|shared folder`), Why: "the project's shared folder is outside the repository; move what the reader needs into docs/"},
}

// TestDocumentation holds README.md and docs/ to what a reader relies on: every relative link
// and #anchor resolves inside the repository, nothing links outside it, no "seed" jargon, and
// the README stays a short path to an install (under 250 lines).
func TestDocumentation(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the repository root is not at %s: %v", root, err)
	}
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := Check(root, files, Rules{
		MaxREADMELines: 249,
		Forbidden:      forbidden,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func TestLinks(t *testing.T) {
	for _, tc := range []struct {
		name, md string
		want     []Link
	}{
		{"inline link and anchor", "See [the table](docs/configuration.md#flags).\n", []Link{{1, "docs/configuration.md#flags"}}},
		{"link text over two lines: the target's line", "a [long\ntext](x.md) b\n", []Link{{2, "x.md"}}},
		{"title and angle brackets", "[a](<b c.md> \"title\") [d](e.md 'f')\n", []Link{{1, "b c.md"}, {1, "e.md"}}},
		{"image", "![logo](img/logo.png)\n", []Link{{1, "img/logo.png"}}},
		{"reference definition", "[a][x]\n\n[x]: ../shared/DESIGN.md\n", []Link{{3, "../shared/DESIGN.md"}}},
		{"autolink", "mail <https://example.com/a> now\n", []Link{{1, "https://example.com/a"}}},
		{"bare URL, trailing punctuation dropped", "see https://github.com/kustos-dev/kustos.\n", []Link{{1, "https://github.com/kustos-dev/kustos"}}},
		{"URL as a link target is one link", "[x](https://example.com)\n", []Link{{1, "https://example.com"}}},
		{"code span hides links", "`[x](y.md)` and `https://api.github.com/`\n", nil},
		{"code span over two lines", "a `b\n[x](y.md)` c\n", nil},
		{"double backticks", "``a ` [x](y.md)`` [z](w.md)\n", []Link{{1, "w.md"}}},
		{"fenced code hides links", "```sh\ncurl https://example.com [x](y.md)\n```\n[z](w.md)\n", []Link{{4, "w.md"}}},
		{"tilde fence", "~~~\n[x](y.md)\n~~~\n", nil},
		{"unclosed backtick is literal", "a ` b [x](y.md)\n", []Link{{1, "y.md"}}},
		{"table cell", "| [a](#pr-mode) | `--x` |\n", []Link{{1, "#pr-mode"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Links([]byte(tc.md)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Links(%q) = %v, want %v", tc.md, got, tc.want)
			}
		})
	}
}

func TestAnchors(t *testing.T) {
	md := "# Kustos\n## PR mode\n### Creating the GitHub App\n" +
		"## Cleaners: short-lived objects that go when a team says so\n" +
		"### `kustos inactivity plan`: the same decision, offline\n" +
		"#### A secured Prometheus ####\n## PR mode\n" +
		"```sh\n# chart:\n```\n## Modes: observe, pr, direct\n## What [a link](x.md) says\n## snake_case & more\n"
	want := map[string]bool{
		"kustos": true, "pr-mode": true, "creating-the-github-app": true,
		"cleaners-short-lived-objects-that-go-when-a-team-says-so": true,
		"kustos-inactivity-plan-the-same-decision-offline":         true,
		"a-secured-prometheus":                                     true, "pr-mode-1": true,
		"modes-observe-pr-direct": true, "what-a-link-says": true, "snake_case--more": true,
	}
	if got := Anchors([]byte(md)); !reflect.DeepEqual(got, want) {
		t.Errorf("Anchors = %v, want %v", got, want)
	}
}

func TestCheck(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# R\n\n[ok](docs/a.md#two) [dir](charts/) [self](#r) [pending](docs/later.md)\n"+
		"[gone](docs/none.md) [under a file](docs/a.md/b.md) [bad anchor](docs/a.md#three) [shared](../shared/DESIGN.md)\n"+
		"[web](https://github.com/kustos-dev/kustos) [go](cmd/main.go#L3) a seed here\n")
	write("docs/a.md", "# One\n## Two\n[up](../README.md#r) [abs](/README.md)\n")
	write("charts/x", "")
	write("cmd/main.go", "package main\n")
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"README.md", "docs/a.md"}; !reflect.DeepEqual(files, want) {
		t.Fatalf("Files = %v, want %v", files, want)
	}
	// The changelog is checked like the docs once there is one.
	write("CHANGELOG.md", "# C\n\n[up](docs/upgrading.md)\n")
	if files, err = Files(root); err != nil {
		t.Fatal(err)
	}
	if want := []string{"README.md", "CHANGELOG.md", "docs/a.md"}; !reflect.DeepEqual(files, want) {
		t.Fatalf("Files = %v, want %v", files, want)
	}
	problems, err := Check(root, files, Rules{MaxREADMELines: 3, Pending: map[string]bool{"docs/later.md": true}, Forbidden: forbidden})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []string{
		"README.md:5: README.md has 5 lines, more than 3: move reference material into docs/",
		`README.md:4: "../shared": the project's shared folder is outside the repository; move what the reader needs into docs/`,
		`README.md:5: "seed": project jargon; say what is meant (the design, the example, the convention)`,
		"README.md:4: docs/none.md: no such file in the repository (docs/none.md)",
		"README.md:4: docs/a.md/b.md: no such file in the repository (docs/a.md/b.md)",
		"README.md:4: docs/a.md#three: docs/a.md has no heading with the anchor #three",
		"README.md:4: ../shared/DESIGN.md leaves the repository",
		"README.md:5: https://github.com/kustos-dev/kustos links outside the repository",
		"README.md:5: cmd/main.go#L3: an anchor into cmd/main.go, which is no Markdown file whose headings can be checked",
		"CHANGELOG.md:3: docs/upgrading.md: no such file in the repository (docs/upgrading.md)",
		"docs/a.md:3: /README.md: an absolute path; link relative to docs/a.md",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// FuzzLinks: any input is read without panicking, and every link found is text of the input
// on the line reported.
func FuzzLinks(f *testing.F) {
	for _, s := range []string{
		"[a](b.md#c)\n", "``x`` `y\n[z](w)`\n", "```\n[a](b)\n```\n", "<https://x.y> http://a.b/c.\n",
		"[x]: <y z>\n", "# H\n~~~~\n# not\n~~~~\n", "a]( b ) c\n", "`\n\n`[a](b)`\n",
		"| a | b |\n|---|---|\ntext\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		lines := strings.Split(md, "\n")
		for _, l := range Links([]byte(md)) {
			if l.Line < 1 || l.Line > len(lines) {
				t.Fatalf("link %q on line %d of %d", l.Target, l.Line, len(lines))
			}
			if l.Target != "" && !strings.Contains(lines[l.Line-1], l.Target) {
				t.Fatalf("link %q is not on line %d (%q)", l.Target, l.Line, lines[l.Line-1])
			}
		}
		Anchors([]byte(md))
		for _, n := range TableRunOns([]byte(md)) {
			if n < 3 || n > len(lines) || strings.Contains(lines[n-1], "|") || strings.TrimSpace(lines[n-1]) == "" {
				t.Fatalf("run-on line %d (of %d) is no text line after a table", n, len(lines))
			}
		}
	})
}

// TestTableRunOns: text right after a table, which GitHub renders as a row of it, is found;
// a blank line, a heading, a list or a fence ends a table, and a pipe in a code block or a
// paragraph starts none.
func TestTableRunOns(t *testing.T) {
	for _, tc := range []struct {
		name, md string
		want     []int
	}{
		{"paragraph after a table", "| a | b |\n|---|---:|\n| 1 | 2 |\nNext paragraph.\n", []int{4}},
		{"blank line after a table", "| a | b |\n|---|---|\n| 1 | 2 |\n\nNext paragraph.\n", nil},
		{"rows without outer pipes", "a | b\n--- | ---\n1 | 2\nrun on\n", []int{4}},
		{"heading after a table", "| a |\n|---|\n| 1 |\n## Next\n", nil},
		{"list after a table", "| a |\n|---|\n| 1 |\n- item\n", nil},
		{"fence after a table", "| a |\n|---|\n| 1 |\n```\ncode\n```\n", nil},
		{"one report per table", "| a |\n|---|\nrun on\nand on\n", []int{3}},
		{"a table in a code block", "```\n| a |\n|---|\n```\ntext\n", nil},
		{"a pipe in a paragraph", "a | b\nno delimiter row\n", nil},
		{"a thematic break is no delimiter row", "a | b\n---\ntext\n", nil},
		{"two tables", "| a |\n|---|\n\ntext\n\n| b |\n| :-: |\n| 2 |\ntext\n", []int{9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TableRunOns([]byte(tc.md)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("TableRunOns = %v, want %v", got, tc.want)
			}
		})
	}
}

// commentForbidden: what a comment of Kustos's Go code must not cite. The design documents the code
// was first written from are not in the repository, so a comment that cites one (by name, number or
// section) tells a reader nothing: it says the rule itself, or points to a page under docs/. The
// word keeps its ordinary uses: a fuzz test's seed corpus, the RNG seed of a benchmark (its -seed
// flag), maphash.Seed, githubtest's SeedRepo, which seeds owner/repo with its first commit, and the
// word itself, quoted as "seed".
var commentForbidden = []Forbidden{
	{
		Pattern: regexp.MustCompile(`(?i)\bseeds?\b`),
		Why:     "cites a design document that is not in the repository; say the rule itself, or point to a page under docs/",
		Except:  regexp.MustCompile(`(?i)\bseed corp(us|ora)\b|\bRNG seed\b|(^|[\s(])-seed\b|maphash\.Seed\b|\bseeds [\w.-]+/[\w.-]+|"seed"`),
	},
	{
		Pattern: regexp.MustCompile(`DESIGN\.md`),
		Why:     "the design page is not in the repository; point to docs/architecture.md or say what is meant",
	},
	{
		Pattern: regexp.MustCompile(`\.\./shared\b`),
		Why:     "the project's shared folder is outside the repository; say what is meant",
	},
}

// TestGoComments holds every comment of the repository's Go code, tests included, to
// commentForbidden.
func TestGoComments(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := GoFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("GoFiles found %d files under %s; the walk is broken", len(files), root)
	}
	problems, err := CheckComments(root, files, commentForbidden)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestCheckComments: a citation in a line or block comment is found at its line; the same text in
// code or a string literal, and the word's ordinary uses, are not; testdata is not read.
func TestCheckComments(t *testing.T) {
	why := commentForbidden[0].Why
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"numbered design document", "package a\n\n// Ready: Available at the current generation (seed 002's root Ready).\n",
			[]string{`a.go:3: "seed": ` + why}},
		{"section number", "package a\n\n/* the threshold\n   trigger (seed 2.1) */\nvar x int\n",
			[]string{`a.go:4: "seed": ` + why}},
		{"the seed's convention, twice on a line: reported once", "package a\n\n// the seed's convention, as the seed says\n",
			[]string{`a.go:3: "seed": ` + why}},
		{"both seeds", "package a\n\n// one rule for both seeds\n", []string{`a.go:3: "seeds": ` + why}},
		{"seeds, not of a repository", "package a\n\n// Large seeds go through a work tree.\n", []string{`a.go:3: "seeds": ` + why}},
		{"seed-convention", "package a\n\n// a seed-convention Lease\n", []string{`a.go:3: "seed": ` + why}},
		{"the design page", "package a\n\nfunc f() {} // DESIGN.md, \"The flow\"\n",
			[]string{`a.go:3: "DESIGN.md": the design page is not in the repository; point to docs/architecture.md or say what is meant`}},
		{"the shared folder", "package a\n\n// see ../shared/x\n",
			[]string{`a.go:3: "../shared": the project's shared folder is outside the repository; say what is meant`}},
		{"identifiers and strings are code", "package a\n\nvar seedCondition, orphanSeed = \"the seed's\", `seed 002`\n\n// SeedRepo seeds acme/gitops: seeded, seeding.\nfunc SeedRepo() {}\n", nil},
		{"ordinary uses", "package a\n\n// The seed corpus is in testdata/fuzz; a seeded RNG (-seed), the RNG seed, maphash.Seed.\n", nil},
		{"an ordinary use does not excuse another on the line", "package a\n\n// the RNG seed, as the seed says\n",
			[]string{`a.go:3: "seed": ` + why}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, src := range map[string]string{"a.go": tc.src, "testdata/b.go": "package b\n\n// seed 002\n", ".git/c.go": "// seed 1.1\n"} {
				p := filepath.Join(root, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			files, err := GoFiles(root)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(files, []string{"a.go"}) {
				t.Fatalf("GoFiles = %v, want [a.go]", files)
			}
			problems, err := CheckComments(root, files, commentForbidden)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestChartVersionsInDocs: the versions the README and docs/install.md name in their install,
// upgrade and image examples are the chart's (helm --version) and its appVersion (image tags),
// so that an example is one that works and cannot drift from charts/kustos/Chart.yaml.
func TestChartVersionsInDocs(t *testing.T) {
	root := filepath.Join("..", "..")
	chart, err := ReadChart(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[VersionKind]string{ChartVersion: chart.Version, AppVersion: chart.AppVersion}
	for _, tc := range []struct {
		file     string
		mustName []VersionKind // each at least once, so that a reworded example is not unchecked
	}{
		{"README.md", []VersionKind{ChartVersion, AppVersion}},
		{filepath.Join("docs", "install.md"), []VersionKind{ChartVersion, AppVersion}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(root, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			named := map[VersionKind]bool{}
			for _, m := range Versions(string(b)) {
				named[m.Kind] = true
				if m.Version != want[m.Kind] {
					t.Errorf("%s:%d: %q names %s, but %s is %s (charts/kustos/Chart.yaml)", tc.file, m.Line, m.Text, m.Version, m.Kind, want[m.Kind])
				}
			}
			for _, k := range tc.mustName {
				if !named[k] {
					t.Errorf("%s names %s (%s) nowhere", tc.file, k, want[k])
				}
			}
		})
	}
}

func TestVersions(t *testing.T) {
	for _, tc := range []struct {
		name, md string
		want     []Mention
	}{
		{"helm install", "helm install kustos oci://ghcr.io/kustos-dev/charts/kustos --version 0.1.0 \\\n", []Mention{{1, ChartVersion, "0.1.0", "--version 0.1.0"}}},
		{"--version=", "helm upgrade k c --version=0.3.0\n", []Mention{{1, ChartVersion, "0.3.0", "--version=0.3.0"}}},
		{"an image in a code span", "runs `ghcr.io/kustos-dev/kustos:0.2.0` built", []Mention{{1, AppVersion, "0.2.0", "/kustos:0.2.0"}}},
		{"a --set", "--set image.repository=r/kustos,image.tag=0.1.0\n", []Mention{{1, AppVersion, "0.1.0", "image.tag=0.1.0"}}},
		{"placeholders and names are not versions", "--version <version> r/kustos:dev image.tag=…\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Versions(tc.md); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Versions = %+v, want %+v", got, tc.want)
			}
		})
	}
}
