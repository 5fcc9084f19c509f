package yamledit

import "bytes"

// Span is the byte range [Start, End) of one document in a file. A document that follows a
// "---" separator line starts at that line, so the separator belongs to the document after it.
type Span struct {
	Start, End int
}

// span is a raw segment of a file between separators; empty segments hold only comments,
// blank lines, directives or document end markers.
type span struct {
	Span
	empty bool
}

// Documents returns the byte ranges of the non-empty documents in content, in order. The index
// of a document in this slice is the doc number used by Apply and by package index.
func Documents(content []byte) []Span {
	var out []Span
	for _, s := range segments(content) {
		if !s.empty {
			out = append(out, s.Span)
		}
	}
	return out
}

// isSeparator reports whether line (with its line ending) is a "---" document start marker.
func isSeparator(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	if len(line) == 3 {
		return true
	}
	switch line[3] {
	case ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// segments splits content at separator lines.
func segments(content []byte) []span {
	var out []span
	start := 0
	empty := true
	pos := 0
	for pos < len(content) {
		end := bytes.IndexByte(content[pos:], '\n')
		if end < 0 {
			end = len(content)
		} else {
			end = pos + end + 1
		}
		line := content[pos:end]
		if isSeparator(line) {
			if pos > start {
				out = append(out, span{Span{start, pos}, empty})
			}
			start = pos
			empty = !lineHasContent(line[3:])
		} else if empty && lineHasContent(line) {
			t := bytes.TrimLeft(line, " \t")
			if !(bytes.HasPrefix(t, []byte("...")) && len(bytes.TrimSpace(t)) == 3) && !bytes.HasPrefix(line, []byte("%")) {
				empty = false
			}
		}
		pos = end
	}
	if len(content) > start {
		out = append(out, span{Span{start, len(content)}, empty})
	}
	return out
}

// lineHasContent reports whether a line holds anything but blanks and a comment.
func lineHasContent(line []byte) bool {
	t := bytes.TrimSpace(line)
	if len(t) >= 3 && t[0] == 0xEF && t[1] == 0xBB && t[2] == 0xBF { // BOM
		t = bytes.TrimSpace(t[3:])
	}
	return len(t) > 0 && t[0] != '#'
}
