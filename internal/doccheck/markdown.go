package doccheck

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Link is a link target found in a Markdown document, with the line the target is on (1-based).
type Link struct {
	Line   int
	Target string
}

var (
	// inlineLink matches the "(target)" or "(<target> "title")" part of [text](target) and
	// ![alt](target); the text part may span lines, the target may not.
	inlineLink = regexp.MustCompile(`\]\(\s*(<[^>\n]*>|[^)\s]*)(?:\s+(?:"[^"\n]*"|'[^'\n]*'))?\s*\)`)
	// refDefinition matches a link reference definition, [label]: target.
	refDefinition = regexp.MustCompile(`(?m)^ {0,3}\[[^\]\n]+\]:[ \t]*(<[^>\n]*>|\S+)`)
	// autoLink matches <scheme:...> autolinks and e-mail autolinks.
	autoLink = regexp.MustCompile(`<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*|[^\s<>@]+@[^\s<>@]+\.[A-Za-z]+)>`)
	// bareURL matches what GitHub's autolink extension turns into a link without any markup.
	bareURL = regexp.MustCompile(`(?i)\b(?:https?://|www\.)[^\s<>]*`)
	// atxHeading matches "## Heading" with an optional closing sequence of #.
	atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	// headingLink replaces [text](target) by its text when a heading is rendered.
	headingLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// Links returns the links of md outside code: inline links and images, reference definitions,
// autolinks, and bare URLs in text (as Target, whether or not they are also inside a link's
// target). Links are ordered by position.
func Links(md []byte) []Link {
	text := prose(string(md))
	var links []Link
	add := func(start int, target string) {
		target = strings.TrimSuffix(strings.TrimPrefix(target, "<"), ">")
		links = append(links, Link{Line: 1 + strings.Count(text[:start], "\n"), Target: target})
	}
	for _, m := range inlineLink.FindAllStringSubmatchIndex(text, -1) {
		add(m[2], text[m[2]:m[3]])
	}
	for _, m := range refDefinition.FindAllStringSubmatchIndex(text, -1) {
		add(m[2], text[m[2]:m[3]])
	}
	for _, m := range autoLink.FindAllStringSubmatchIndex(text, -1) {
		add(m[2], text[m[2]:m[3]])
	}
	for _, m := range bareURL.FindAllStringIndex(text, -1) {
		if inside(links, text, m[0]) {
			continue
		}
		add(m[0], strings.TrimRight(text[m[0]:m[1]], ".,:;!?*_~)'\""))
	}
	sortLinks(links)
	return links
}

// inside reports whether a bare URL at offset is the target of a link already found on its
// line, so that [x](https://…) is reported once.
func inside(links []Link, text string, offset int) bool {
	line := 1 + strings.Count(text[:offset], "\n")
	end := strings.IndexByte(text[offset:], '\n')
	if end < 0 {
		end = len(text) - offset
	}
	url := text[offset : offset+end]
	for _, l := range links {
		if l.Line == line && l.Target != "" && strings.HasPrefix(url, l.Target) {
			return true
		}
	}
	return false
}

func sortLinks(links []Link) {
	// Insertion sort by line: documents hold few links, and the order within a line is kept.
	for i := 1; i < len(links); i++ {
		for j := i; j > 0 && links[j].Line < links[j-1].Line; j-- {
			links[j], links[j-1] = links[j-1], links[j]
		}
	}
}

// Anchors returns the anchors GitHub gives the ATX headings of md ("## A b" → "a-b"; a repeated
// slug gets -1, -2 …). Headings inside fenced code blocks are not headings.
func Anchors(md []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	var code fences
	for _, line := range strings.Split(string(md), "\n") {
		if code.code(line) {
			continue
		}
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := Slug(m[2])
		if n, ok := seen[slug]; ok {
			seen[slug] = n + 1
			slug += "-" + strconv.Itoa(n+1)
		} else {
			seen[slug] = 0
		}
		anchors[slug] = true
	}
	return anchors
}

// Slug is GitHub's anchor for a heading's Markdown text: the rendered text (code spans as
// their content, links as their text, no emphasis marks) in lower case, without characters
// other than letters, marks, digits, underscores, hyphens and spaces, spaces made hyphens.
func Slug(heading string) string {
	text := headingLink.ReplaceAllString(heading, "$1")
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// fences follows the fenced code blocks of a document, line by line.
type fences struct {
	open  bool
	fence string // the opening fence while open
}

// code reports whether line is code: a fence that opens or closes a block, or a line inside
// one. A closing fence is at least as long as the opening one, of the same character, and
// carries no info string.
func (f *fences) code(line string) bool {
	fence, ok := fenceOf(line)
	switch {
	case ok && !f.open:
		f.open, f.fence = true, fence
		return true
	case ok && strings.HasPrefix(fence, f.fence) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), f.fence[:1])) == "":
		f.open = false
		return true
	}
	return f.open
}

// fenceOf returns the fence (``` or ~~~, at least three) a line opens or closes a fenced code
// block with.
func fenceOf(line string) (string, bool) {
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 || len(trimmed) < 3 {
		return "", false
	}
	c := trimmed[0]
	if c != '`' && c != '~' {
		return "", false
	}
	n := 0
	for n < len(trimmed) && trimmed[n] == c {
		n++
	}
	if n < 3 || (c == '`' && strings.ContainsRune(trimmed[n:], '`')) {
		return "", false
	}
	return trimmed[:n], true
}

// prose returns md with fenced code blocks and code spans blanked out (newlines kept, so
// offsets still give line numbers): what is left is the text GitHub may render links from.
func prose(md string) string {
	lines := strings.SplitAfter(md, "\n")
	var out, para strings.Builder
	flush := func() {
		out.WriteString(blankCodeSpans(para.String()))
		para.Reset()
	}
	var code fences
	for _, line := range lines {
		if code.code(strings.TrimRight(line, "\n")) {
			flush()
			out.WriteString(blank(line))
			continue
		}
		if strings.TrimSpace(line) == "" {
			flush()
			out.WriteString(line)
			continue
		}
		para.WriteString(line)
	}
	flush()
	return out.String()
}

// blankCodeSpans blanks each code span of a paragraph: a run of n backticks up to the next run
// of exactly n backticks. An unmatched run is literal text.
func blankCodeSpans(p string) string {
	b := []byte(p)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := run(b, i)
		closing := -1
		for j := i + n; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := run(b, j)
			if m == n {
				closing = j
				break
			}
			j += m
		}
		if closing < 0 {
			i += n
			continue
		}
		for k := i; k < closing+n; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
		i = closing + n
	}
	return string(b)
}

func run(b []byte, i int) int {
	n := 0
	for i+n < len(b) && b[i+n] == '`' {
		n++
	}
	return n
}

func blank(line string) string {
	if strings.HasSuffix(line, "\n") {
		return strings.Repeat(" ", len(line)-1) + "\n"
	}
	return strings.Repeat(" ", len(line))
}

// tableDelimiter is a table's delimiter row: | --- | :---: |, with or without outer pipes.
var tableDelimiter = regexp.MustCompile(`^\s{0,3}\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`)

// blockStart is a line that starts a block of its own after a table: a heading, a fence, a
// quote, a list item, a thematic break or HTML.
var blockStart = regexp.MustCompile(`^\s{0,3}(#{1,6}(\s|$)|` + "```" + `|~~~|>|[-*+]\s|\d{1,9}[.)]\s|<|(\*\s*){3,}$|(-\s*){3,}$|(_\s*){3,}$)`)

// TableRunOns returns the lines (1-based) where text follows a table without a blank line:
// GitHub renders such a line as one more row of the table (its text in the first cell), not as
// the paragraph it was meant to start.
func TableRunOns(md []byte) []int {
	var out []int
	var code fences
	inTable := false
	prev := ""
	for i, line := range strings.Split(string(md), "\n") {
		if code.code(line) {
			inTable, prev = false, ""
			continue
		}
		switch {
		case strings.TrimSpace(line) == "":
			inTable = false
		case inTable && blockStart.MatchString(line):
			inTable = false
		case inTable && !strings.Contains(line, "|"):
			out = append(out, i+1)
			inTable = false // one report per table
		case !inTable && strings.Contains(prev, "|") && tableDelimiter.MatchString(line) && cells(prev) == cells(line):
			inTable = true
		}
		prev = line
	}
	return out
}

// cells counts a table row's cells: its pipes, less the outer ones, plus one (GitHub makes a
// table only where the header row and the delimiter row have as many).
func cells(row string) int {
	row = strings.TrimSpace(strings.ReplaceAll(row, `\|`, ""))
	row = strings.TrimPrefix(row, "|")
	row = strings.TrimSuffix(row, "|")
	return strings.Count(row, "|") + 1
}
