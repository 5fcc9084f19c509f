package yamledit

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// RemoveResource removes from a kustomization file every entry of its resources: list that
// names the file at filePath. kustPath is the kustomization file's path and filePath the
// removed file's, both slash-separated and relative to the repository root; an entry names the
// file when it resolves to it from the kustomization's directory ("x.yaml", "./x.yaml",
// "../base/x.yaml"). Entries that name a directory, another file or a remote resource are left
// alone, and so are the bases: and components: lists, which name kustomizations.
//
// The kustomization is parsed with kyaml and each entry is cut out of the original bytes: its
// line in a block sequence, together with the comment lines directly above it (yaml.v3 and
// kyaml attach those to the entry, so they would otherwise describe the entry below), or its
// text and one comma in a flow sequence. Every other byte stays as it was. A list that loses
// its last entry becomes "resources: []". Every removal is verified by re-parsing: the result
// must decode to the original kustomization without exactly that entry, or RemoveResource
// fails with ErrVerify.
//
// It returns the new content and the removed entries as written; content unchanged and no
// entries when nothing names the file. It fails with ErrUnsupported when an entry that names
// the file cannot be cut out without reformatting (a multi-line entry, a comment inside a flow
// sequence) or when the file holds more than one YAML document.
func RemoveResource(content []byte, kustPath, filePath string) (out []byte, removed []string, err error) {
	var spans []Span
	for _, s := range segments(content) {
		if !s.empty {
			spans = append(spans, s.Span)
		}
	}
	switch len(spans) {
	case 0:
		return content, nil, nil
	case 1:
	default:
		return nil, nil, fmt.Errorf("%w: kustomization %s holds %d YAML documents", ErrUnsupported, kustPath, len(spans))
	}
	sp := spans[0]
	seg := content[sp.Start:sp.End]
	dir := path.Dir(kustPath)
	filePath = path.Clean(filePath)
	for {
		root, err := parseSeg(seg)
		if err != nil {
			return nil, nil, fmt.Errorf("kustomization %s: %w", kustPath, err)
		}
		key, list := field(root, "resources")
		if list == nil || (list.Kind == yaml.ScalarNode && list.Tag == "!!null") {
			break
		}
		if list.Kind != yaml.SequenceNode {
			return nil, nil, fmt.Errorf("%w: kustomization %s: resources is not a list", ErrUnsupported, kustPath)
		}
		idx := -1
		for i, e := range list.Content {
			if e.Kind == yaml.ScalarNode && namesFile(dir, e.Value, filePath) {
				idx = i
				break
			}
		}
		if idx < 0 {
			break
		}
		entry := list.Content[idx].Value
		var next []byte
		if list.Style&yaml.FlowStyle != 0 {
			next, err = cutFlowEntry(seg, list, idx)
		} else {
			next, err = cutBlockEntry(seg, key, list, idx)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: kustomization %s: resources entry %q: %w", ErrUnsupported, kustPath, entry, err)
		}
		if err := verifyRemoval(seg, next, idx); err != nil {
			return nil, nil, fmt.Errorf("kustomization %s: resources entry %q: %w", kustPath, entry, err)
		}
		removed = append(removed, entry)
		seg = next
	}
	if len(removed) == 0 {
		return content, nil, nil
	}
	out = make([]byte, 0, len(content))
	out = append(out, content[:sp.Start]...)
	out = append(out, seg...)
	out = append(out, content[sp.End:]...)
	return out, removed, nil
}

// namesFile reports whether the resources entry, read from directory dir, is the file p.
func namesFile(dir, entry, p string) bool {
	if entry == "" || strings.HasPrefix(entry, "/") || strings.Contains(entry, "://") ||
		strings.HasPrefix(entry, "git@") || strings.HasPrefix(entry, "github.com/") {
		return false // absolute or remote: not a file of this repository
	}
	return path.Join(dir, entry) == p
}

// cutBlockEntry removes entry idx of block sequence list (the value of key): the entry's line
// and the comment lines directly above it at the dash's indentation, when the parser attached
// them to the entry.
func cutBlockEntry(seg []byte, key, list *yaml.Node, idx int) ([]byte, error) {
	e := list.Content[idx]
	lines := lineStarts(seg)
	_, _, end, err := scalarExtent(seg, lines, e, false)
	if err != nil {
		return nil, err
	}
	start, ok := offsetOf(seg, lines, e.Line, e.Column)
	if !ok {
		return nil, fmt.Errorf("position %d:%d outside the document", e.Line, e.Column)
	}
	lineStart := lines[e.Line-1]
	if e.Line == 1 && bytes.HasPrefix(seg, []byte("\xEF\xBB\xBF")) {
		lineStart += 3
	}
	lead := string(seg[lineStart:start])
	indent := len(lead) - len(strings.TrimLeft(lead, " "))
	if rest := strings.TrimSpace(lead[indent:]); rest != "-" {
		return nil, errors.New("the entry does not start its own line")
	}
	rest := strings.TrimSpace(string(seg[end:lineStop(seg, end)]))
	if rest != "" && !strings.HasPrefix(rest, "#") {
		return nil, errors.New("more text follows the entry on its line")
	}
	from := lineStart
	if e.HeadComment != "" {
		for l := e.Line - 1; l >= 1; l-- {
			text := strings.TrimRight(lineText(seg, lines, l), "\r\n")
			t := strings.TrimLeft(text, " ")
			if !strings.HasPrefix(t, "#") || len(text)-len(t) != indent || l == key.Line {
				break
			}
			from = lines[l-1]
		}
	}
	to, _ := lineEnd(seg, lines, e.Line, "")
	out := splice(seg, from, to, "")
	if len(list.Content) > 1 {
		return out, nil
	}
	// The list is empty now: say so, rather than leaving "resources:" (null).
	_, _, kend, err := scalarExtent(out, lineStarts(out), key, false)
	if err != nil {
		return nil, fmt.Errorf("the resources key: %w", err)
	}
	colon := kend
	for colon < len(out) && (out[colon] == ' ' || out[colon] == '\t') {
		colon++
	}
	if colon >= len(out) || out[colon] != ':' {
		return nil, errors.New("no colon after the resources key")
	}
	return splice(out, colon+1, colon+1, " []"), nil
}

// cutFlowEntry removes entry idx of flow sequence list with one of the commas next to it.
func cutFlowEntry(seg []byte, list *yaml.Node, idx int) ([]byte, error) {
	lines := lineStarts(seg)
	type extent struct{ start, end int }
	ext := make([]extent, len(list.Content))
	for i, e := range list.Content {
		if i < idx-1 || i > idx+1 {
			continue
		}
		if e.Kind != yaml.ScalarNode {
			return nil, errors.New("a neighbouring entry is not a scalar")
		}
		s, _, end, err := scalarExtent(seg, lines, e, true)
		if err != nil {
			return nil, err
		}
		ext[i] = extent{s, end}
	}
	open, ok := offsetOf(seg, lines, list.Line, list.Column)
	if !ok || open >= len(seg) || seg[open] != '[' {
		return nil, errors.New("cannot find the flow sequence's '['")
	}
	if bytes.IndexByte(seg[open:flowEnd(seg, open)], '#') >= 0 {
		return nil, errors.New("a comment inside the flow sequence")
	}
	switch {
	case len(list.Content) == 1:
		return splice(seg, open+1, flowEnd(seg, open)-1, ""), nil
	case idx+1 < len(list.Content):
		// "a, x, b" → "a, b": from the entry to the next one.
		return splice(seg, ext[idx].start, ext[idx+1].start, ""), nil
	default:
		// "a, x" → "a": from the end of the entry before.
		return splice(seg, ext[idx-1].end, ext[idx].end, ""), nil
	}
}

// flowEnd returns the offset just after the ']' that closes the flow sequence opened at open.
// Quoted scalars are skipped; comments are not expected (the caller refuses them).
func flowEnd(seg []byte, open int) int {
	depth := 0
	for i := open; i < len(seg); i++ {
		switch seg[i] {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		case '"':
			for i++; i < len(seg) && seg[i] != '"'; i++ {
				if seg[i] == '\\' {
					i++
				}
			}
		case '\'':
			// '' inside a single-quoted scalar closes and reopens it: the depth is unaffected.
			if j := bytes.IndexByte(seg[i+1:], '\''); j >= 0 {
				i += j + 1
			} else {
				i = len(seg)
			}
		}
	}
	return len(seg)
}

// lineStop returns the offset of the line ending (or end of input) at or after off.
func lineStop(seg []byte, off int) int {
	for i := off; i < len(seg); i++ {
		if seg[i] == '\n' || seg[i] == '\r' {
			return i
		}
	}
	return len(seg)
}

// verifyRemoval checks that after decodes to before without entry idx of resources (an empty
// list when it was the last).
func verifyRemoval(before, after []byte, idx int) error {
	var b, a map[string]any
	if err := yaml.Unmarshal(before, &b); err != nil {
		return fmt.Errorf("%w: original kustomization does not decode: %w", ErrVerify, err)
	}
	if err := yaml.Unmarshal(after, &a); err != nil {
		return fmt.Errorf("%w: edited kustomization does not decode: %w", ErrVerify, err)
	}
	list, ok := b["resources"].([]any)
	if !ok || idx >= len(list) {
		return fmt.Errorf("%w: original resources list has no entry %d", ErrVerify, idx)
	}
	b["resources"] = append(list[:idx:idx], list[idx+1:]...)
	if !reflect.DeepEqual(a, b) {
		return fmt.Errorf("%w: the edit changed more than the resources entry", ErrVerify)
	}
	return nil
}
