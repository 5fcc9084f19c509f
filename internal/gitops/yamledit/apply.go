package yamledit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

var (
	// ErrConflict means the file no longer holds the value the detector saw (FieldChange.From):
	// someone changed Git in the meantime. Errors wrapping it are *ConflictError. It also
	// matches lifecycle.ErrSourceConflict.
	ErrConflict = lifecycle.NewError("yamledit: conflict", lifecycle.ErrSourceConflict)
	// ErrDocNotFound means the file has fewer documents than the requested index.
	ErrDocNotFound = lifecycle.NewError("yamledit: document not found", lifecycle.ErrSourceNotEditable)
	// ErrUnsupported means the edit cannot be made without reformatting the document (e.g. a
	// path through a sequence or an alias, a block scalar, a multi-line plain scalar).
	ErrUnsupported = lifecycle.NewError("yamledit: unsupported edit", lifecycle.ErrSourceNotEditable)
	// ErrVerify means an edit did not re-parse to exactly the intended object. It indicates a
	// bug in this package; the edit is refused rather than committed.
	ErrVerify = lifecycle.NewError("yamledit: edit verification failed", lifecycle.ErrSourceNotEditable)
)

// ConflictError says which path held what, when the detector expected something else.
type ConflictError struct {
	Path     []string
	Expected string
	Found    string // "<absent>" when the path does not exist
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("yamledit: conflict at %s: expected %q, found %q (the file changed since the value was observed)",
		pathString(e.Path), e.Expected, e.Found)
}

// Is makes errors.Is(err, ErrConflict) and errors.Is(err, lifecycle.ErrSourceConflict) true.
func (e *ConflictError) Is(target error) bool {
	return target == ErrConflict || target == lifecycle.ErrSourceConflict
}

// FieldResult records one field that an edit changed, for PR bodies.
type FieldResult struct {
	Path []string `json:"path"`
	Old  string   `json:"old,omitempty"`
	New  string   `json:"new"`
	// Created is true when the field did not exist before (Old is then empty).
	Created bool `json:"created,omitempty"`
}

// Result is the outcome of Edit.
type Result struct {
	Out     []byte
	Changed bool
	// Fields lists the changed fields (SetFields, ScaleToZero, SetAnnotations), in edit order;
	// SetAnnotations records each changed annotation as metadata.annotations.<key>.
	Fields []FieldResult
	// Deleted is true when the document was removed.
	Deleted bool
}

// Apply edits document doc (see Documents) of content. It returns the new content and whether
// anything changed; an edit that changes nothing returns content unchanged and changed=false.
func Apply(content []byte, doc int, edit lifecycle.Edit) (out []byte, changed bool, err error) {
	r, err := Edit(content, doc, edit)
	if err != nil {
		return nil, false, err
	}
	return r.Out, r.Changed, nil
}

// Edit is Apply with a record of what changed.
func Edit(content []byte, doc int, edit lifecycle.Edit) (*Result, error) {
	segs := segments(content)
	si := -1
	n := 0
	for i, s := range segs {
		if s.empty {
			continue
		}
		if n == doc {
			si = i
			break
		}
		n++
	}
	if doc < 0 || si < 0 {
		return nil, fmt.Errorf("%w: document %d (the file has %d)", ErrDocNotFound, doc, countDocs(segs))
	}
	fields := edit.Fields
	forcePlain := false
	switch edit.Op {
	case lifecycle.EditDelete:
		return deleteDoc(content, segs, si), nil
	case lifecycle.EditSetFields:
		if len(fields) == 0 {
			return nil, errors.New("yamledit: SetFields edit without fields")
		}
	case lifecycle.EditScaleToZero:
		fc := lifecycle.FieldChange{Path: []string{"spec", "replicas"}, To: "0"}
		for _, f := range edit.Fields {
			if pathString(f.Path) == pathString(fc.Path) {
				fc.From = f.From
			}
		}
		fields = []lifecycle.FieldChange{fc}
		forcePlain = true
	case lifecycle.EditSetAnnotations:
		var err error
		if fields, err = annotationFields(edit.Annotations); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("yamledit: unknown edit op %q", edit.Op)
	}

	seg := content[segs[si].Start:segs[si].End]
	res := &Result{}
	for _, fc := range fields {
		if len(fc.Path) == 0 {
			return nil, errors.New("yamledit: field change with an empty path")
		}
		next, fr, err := setField(seg, fc, forcePlain)
		if err != nil {
			return nil, err
		}
		if fr != nil {
			if err := verify(seg, next, fc.Path, fc.To); err != nil {
				return nil, err
			}
			res.Fields = append(res.Fields, *fr)
			seg = next
		}
	}
	if len(res.Fields) == 0 {
		res.Out = content
		return res, nil
	}
	out := make([]byte, 0, len(content)+len(seg))
	out = append(out, content[:segs[si].Start]...)
	out = append(out, seg...)
	out = append(out, content[segs[si].End:]...)
	res.Out = out
	res.Changed = true
	return res, nil
}

// annotationFields turns a SetAnnotations edit into one field change per annotation, sorted by
// key so that new entries are inserted in a deterministic order.
func annotationFields(annotations map[string]string) ([]lifecycle.FieldChange, error) {
	if len(annotations) == 0 {
		return nil, errors.New("yamledit: SetAnnotations edit without annotations")
	}
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		if k == "" {
			return nil, errors.New("yamledit: SetAnnotations edit with an empty annotation key")
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fields := make([]lifecycle.FieldChange, 0, len(keys))
	for _, k := range keys {
		fields = append(fields, lifecycle.FieldChange{Path: []string{"metadata", "annotations", k}, To: annotations[k]})
	}
	return fields, nil
}

func countDocs(segs []span) int {
	n := 0
	for _, s := range segs {
		if !s.empty {
			n++
		}
	}
	return n
}

// deleteDoc removes segment si. Removing the only document yields empty output.
func deleteDoc(content []byte, segs []span, si int) *Result {
	res := &Result{Changed: true, Deleted: true}
	if countDocs(segs) == 1 {
		res.Out = []byte{}
		return res
	}
	s := segs[si].Span
	start, end := s.Start, s.End
	if !startsWithSeparator(content[start:end]) && si+1 < len(segs) {
		// The first document has no "---": drop the next document's separator line instead,
		// so the file keeps starting without one.
		next := content[end:]
		if isSeparator(next) {
			nl := bytes.IndexByte(next, '\n')
			rest := next[3:]
			if nl >= 0 {
				rest = next[3:nl]
			}
			if !lineHasContent(rest) {
				if nl < 0 {
					end = len(content)
				} else {
					end += nl + 1
				}
			}
		}
	}
	out := make([]byte, 0, len(content)-(end-start))
	out = append(out, content[:start]...)
	out = append(out, content[end:]...)
	res.Out = out
	return res
}

func startsWithSeparator(b []byte) bool { return isSeparator(b) }

// parseSeg parses one document with kyaml (yaml.Parse) and returns its root mapping node.
func parseSeg(seg []byte) (*yaml.Node, error) {
	rn, err := yaml.Parse(string(seg))
	if errors.Is(err, io.EOF) {
		return nil, errors.New("yamledit: document is empty")
	}
	if err != nil {
		return nil, fmt.Errorf("yamledit: parse document: %w", err)
	}
	n := rn.YNode()
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, errors.New("yamledit: document is not a mapping")
	}
	return n, nil
}

// field looks key up in mapping m with kyaml (RNode.Field: the first entry whose key is key)
// and returns the key and value nodes, or nils. It looks up one key at a time rather than
// piping yaml.Lookup over the whole path, because Lookup reads path parts such as "0", "-" or
// "[a=b]" as list selectors, and Kubernetes map keys may look like that.
func field(m *yaml.Node, key string) (k, v *yaml.Node) {
	f := yaml.NewRNode(m).Field(key)
	if f == nil {
		return nil, nil
	}
	return f.Key.YNode(), f.Value.YNode()
}

// lookup returns the value of key in mapping m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	_, v := field(m, key)
	return v
}

// stringField reports whether the value at path must stay a string: an annotation or a label.
func stringField(path []string) bool {
	return len(path) == 3 && path[0] == "metadata" && (path[1] == "annotations" || path[1] == "labels")
}

// setField makes one field change on seg. It returns nil FieldResult when nothing changes.
func setField(seg []byte, fc lifecycle.FieldChange, forcePlain bool) ([]byte, *FieldResult, error) {
	root, err := parseSeg(seg)
	if err != nil {
		return nil, nil, err
	}
	lines := lineStarts(seg)
	eol := "\n"
	if bytes.Contains(seg, []byte("\r\n")) {
		eol = "\r\n"
	}
	node := root
	flow := false
	prevKeyCol := 0
	for i, key := range fc.Path {
		if node.Kind == yaml.AliasNode {
			return nil, nil, fmt.Errorf("%w: %s goes through an alias", ErrUnsupported, pathString(fc.Path[:i]))
		}
		if node.Kind == yaml.ScalarNode && node.Tag == "!!null" && i > 0 {
			// "key:" or "key: ~" with more path below: turn it into a block map.
			if fc.From != "" {
				return nil, nil, &ConflictError{Path: fc.Path, Expected: fc.From, Found: "<absent>"}
			}
			return insertUnderNull(seg, lines, root, fc, i, flow, eol, forcePlain)
		}
		if node.Kind != yaml.MappingNode {
			return nil, nil, fmt.Errorf("%w: %s is not a map", ErrUnsupported, pathString(fc.Path[:i]))
		}
		flow = flow || node.Style&yaml.FlowStyle != 0
		next := lookup(node, key)
		if next == nil {
			if fc.From != "" {
				return nil, nil, &ConflictError{Path: fc.Path, Expected: fc.From, Found: "<absent>"}
			}
			return insertInto(seg, lines, root, node, fc, i, flow, prevKeyCol, eol, forcePlain)
		}
		if len(node.Content) > 0 {
			prevKeyCol = node.Content[0].Column
		}
		node = next
	}
	if node.Kind != yaml.ScalarNode {
		return nil, nil, fmt.Errorf("%w: %s is not a scalar", ErrUnsupported, pathString(fc.Path))
	}
	if fc.From != "" && !sameValue(node.Value, fc.From) {
		return nil, nil, &ConflictError{Path: fc.Path, Expected: fc.From, Found: node.Value}
	}
	if node.Value == fc.To && (!forcePlain || node.Style == 0) {
		return seg, nil, nil
	}
	if node.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return nil, nil, fmt.Errorf("%w: %s is a block scalar", ErrUnsupported, pathString(fc.Path))
	}
	_, valStart, end, err := scalarExtent(seg, lines, node, flow)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrUnsupported, pathString(fc.Path), err)
	}
	var text string
	switch {
	case forcePlain:
		text = fc.To
	case node.Style&yaml.DoubleQuotedStyle != 0:
		text = doubleQuote(fc.To)
	case node.Style&yaml.SingleQuotedStyle != 0:
		if strings.ContainsAny(fc.To, "\r\n") {
			text = doubleQuote(fc.To)
		} else {
			text = "'" + strings.ReplaceAll(fc.To, "'", "''") + "'"
		}
	default:
		tag := node.Tag
		switch {
		case stringField(fc.Path):
			// Annotation and label values must stay strings, whatever the old value was.
			tag = "!!str"
		case isQuantity(node.Value) && isQuantity(fc.To):
			// Quantity fields take numbers and strings alike: keep a plain 20Gi → plain 24.
			tag = ""
		}
		text = scalarText(fc.To, flow, tag)
	}
	out := splice(seg, valStart, end, text)
	return out, &FieldResult{Path: fc.Path, Old: node.Value, New: fc.To}, nil
}

// insertInto adds the missing keys fc.Path[i:] to mapping m.
func insertInto(seg []byte, lines []int, root, m *yaml.Node, fc lifecycle.FieldChange, i int, flow bool, prevKeyCol int, eol string, forcePlain bool) ([]byte, *FieldResult, error) {
	rest := fc.Path[i:]
	fr := &FieldResult{Path: fc.Path, New: fc.To, Created: true}
	val := newScalar(fc.To, forcePlain, fc.Path)
	if m.Style&yaml.FlowStyle != 0 || flow {
		entry := flowEntry(rest, val)
		if len(m.Content) == 0 {
			off, ok := offsetOf(seg, lines, m.Line, m.Column)
			if !ok || off >= len(seg) || seg[off] != '{' {
				return nil, nil, fmt.Errorf("%w: cannot find the empty map at %s", ErrUnsupported, pathString(fc.Path[:i]))
			}
			return splice(seg, off+1, off+1, entry), fr, nil
		}
		last := m.Content[len(m.Content)-1]
		if last.Kind != yaml.ScalarNode || last.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			return nil, nil, fmt.Errorf("%w: flow map at %s ends in a collection", ErrUnsupported, pathString(fc.Path[:i]))
		}
		_, _, end, err := scalarExtent(seg, lines, last, true)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrUnsupported, pathString(fc.Path[:i]), err)
		}
		return splice(seg, end, end, ", "+entry), fr, nil
	}
	if len(m.Content) == 0 {
		return nil, nil, fmt.Errorf("%w: empty block map at %s", ErrUnsupported, pathString(fc.Path[:i]))
	}
	keyCol := m.Content[0].Column
	step := 2
	if prevKeyCol > 0 && keyCol > prevKeyCol {
		step = keyCol - prevKeyCol
	} else if s := indentStep(root); s > 0 {
		step = s
	}
	lastLine := maxLine(m.Content[len(m.Content)-1])
	if l := m.Content[len(m.Content)-2].Line; l > lastLine {
		lastLine = l
	}
	lastLine = extendLines(seg, lines, lastLine, keyCol-1)
	at, prefix := lineEnd(seg, lines, lastLine, eol)
	text := prefix + blockEntry(rest, val, keyCol-1, step, eol)
	return splice(seg, at, at, text), fr, nil
}

// insertUnderNull replaces the null value of fc.Path[i-1] by a block map holding fc.Path[i:].
func insertUnderNull(seg []byte, lines []int, root *yaml.Node, fc lifecycle.FieldChange, i int, flow bool, eol string, forcePlain bool) ([]byte, *FieldResult, error) {
	// Find the key node of fc.Path[i-1] again, with its parent map.
	parent := root
	for _, k := range fc.Path[:i-1] {
		parent = lookup(parent, k)
	}
	key, val := field(parent, fc.Path[i-1])
	if key == nil || flow || parent.Style&yaml.FlowStyle != 0 {
		return nil, nil, fmt.Errorf("%w: null value at %s in a flow map", ErrUnsupported, pathString(fc.Path[:i]))
	}
	fr := &FieldResult{Path: fc.Path, New: fc.To, Created: true}
	step := indentStep(root)
	if step <= 0 {
		step = 2
	}
	entry := blockEntry(fc.Path[i:], newScalar(fc.To, forcePlain, fc.Path), key.Column-1+step, step, eol)
	if val.Line == key.Line && val.Value != "" {
		// "key: ~" or "key: null": remove the null text, then add the lines below.
		_, vs, ve, err := scalarExtent(seg, lines, val, false)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrUnsupported, pathString(fc.Path[:i]), err)
		}
		// drop the blank before the null text too
		for vs > 0 && (seg[vs-1] == ' ' || seg[vs-1] == '\t') {
			vs--
		}
		seg = splice(seg, vs, ve, "")
		lines = lineStarts(seg)
	} else if val.Value != "" {
		return nil, nil, fmt.Errorf("%w: null value at %s is not on its key's line", ErrUnsupported, pathString(fc.Path[:i]))
	}
	at, prefix := lineEnd(seg, lines, key.Line, eol)
	return splice(seg, at, at, prefix+entry), fr, nil
}

// scalarValue is a new scalar's text in block and in flow context.
type scalarValue struct{ block, flow string }

func newScalar(to string, forcePlain bool, path []string) scalarValue {
	if forcePlain {
		return scalarValue{to, to}
	}
	// Annotation and label values must be strings: never let them resolve to a number.
	tag := ""
	if stringField(path) {
		tag = "!!str"
	}
	return scalarValue{scalarText(to, false, tag), scalarText(to, true, tag)}
}

// scalarText renders s plain when it reads back as the same string and a harmless type
// (string, number; or the original tag), and double-quoted otherwise.
func scalarText(s string, flow bool, origTag string) string {
	if s != "" && plainSafe(s, flow, origTag) {
		return s
	}
	return doubleQuote(s)
}

// yaml11Special are plain scalars that YAML 1.1 parsers (sigs.k8s.io/yaml, kubectl, Argo CD,
// Flux) read as booleans, while YAML 1.2 reads them as strings.
var yaml11Special = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "n": true, "N": true, "no": true,
	"No": true, "NO": true, "on": true, "On": true, "ON": true, "off": true, "Off": true, "OFF": true,
}

func plainSafe(s string, flow bool, origTag string) bool {
	if strings.ContainsAny(s, "\r\n\t") || strings.TrimSpace(s) != s || yaml11Special[s] {
		return false
	}
	if strings.Contains(s, "_") && strings.Trim(s, "0123456789_.+-") == "" {
		return false // 1_000: a number in YAML 1.1
	}
	doc := "k: " + s
	if flow {
		doc = "{k: " + s + "}"
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		return false
	}
	if len(n.Content) != 1 || len(n.Content[0].Content) != 2 {
		return false
	}
	v := n.Content[0].Content[1]
	if v.Kind != yaml.ScalarNode || v.Value != s || v.Style != 0 {
		return false
	}
	tag := v.ShortTag()
	if origTag == "!!str" {
		return tag == "!!str"
	}
	return tag == "!!str" || tag == "!!int" || tag == "!!float" || tag == origTag
}

func doubleQuote(s string) string {
	// strconv.Quote's escapes (\a \b \f \n \r \t \v \\ \" \xXX \uXXXX \UXXXXXXXX) are all
	// valid YAML double-quoted escapes.
	return strconv.Quote(s)
}

func keyText(k string, flow bool) string {
	if k != "" && plainSafe(k, flow, "!!str") && !strings.ContainsAny(k, ":#") {
		return k
	}
	return doubleQuote(k)
}

func flowEntry(keys []string, v scalarValue) string {
	if len(keys) == 1 {
		return keyText(keys[0], true) + ": " + v.flow
	}
	return keyText(keys[0], true) + ": {" + flowEntry(keys[1:], v) + "}"
}

func blockEntry(keys []string, v scalarValue, indent, step int, eol string) string {
	var b strings.Builder
	for j, k := range keys {
		b.WriteString(strings.Repeat(" ", indent+j*step))
		b.WriteString(keyText(k, false))
		b.WriteString(":")
		if j == len(keys)-1 {
			b.WriteString(" " + v.block)
		}
		b.WriteString(eol)
	}
	return b.String()
}

// indentStep finds the document's mapping indentation: the column difference between a block
// map's keys and the keys of the first block map nested in it.
func indentStep(n *yaml.Node) int {
	if n.Kind != yaml.MappingNode || n.Style&yaml.FlowStyle != 0 || len(n.Content) == 0 {
		return 0
	}
	for j := 1; j < len(n.Content); j += 2 {
		v := n.Content[j]
		if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
			if d := v.Content[0].Column - n.Content[j-1].Column; d > 0 {
				return d
			}
		}
	}
	for j := 1; j < len(n.Content); j += 2 {
		if s := indentStep(n.Content[j]); s > 0 {
			return s
		}
	}
	return 0
}

func maxLine(n *yaml.Node) int {
	m := n.Line
	for _, c := range n.Content {
		if l := maxLine(c); l > m {
			m = l
		}
	}
	return m
}

// extendLines moves past the lines that continue the value ending at line (1-based): non-blank
// lines indented deeper than indent (block scalar bodies, continuation lines), and blank lines
// only when such a line follows them. Comment lines at or left of indent stop it.
func extendLines(seg []byte, lines []int, line, indent int) int {
	last := line
	for l := line + 1; l <= len(lines); l++ {
		text := lineText(seg, lines, l)
		t := strings.TrimRight(text, " \t\r\n")
		if t == "" {
			continue
		}
		ind := len(t) - len(strings.TrimLeft(t, " "))
		if ind <= indent {
			break
		}
		last = l
	}
	return last
}

// lineStarts returns the byte offset of the start of each line; lines[0] is line 1.
func lineStarts(b []byte) []int {
	ls := []int{0}
	for i, c := range b {
		if c == '\n' && i+1 < len(b) {
			ls = append(ls, i+1)
		}
	}
	return ls
}

func lineText(seg []byte, lines []int, l int) string {
	s := lines[l-1]
	e := len(seg)
	if l < len(lines) {
		e = lines[l]
	}
	return string(seg[s:e])
}

// lineEnd returns the offset just after line l's line ending; when the line has none (end of
// file), the offset of the end and the line ending to put before an inserted line.
func lineEnd(seg []byte, lines []int, l int, eol string) (int, string) {
	if l < len(lines) {
		return lines[l], ""
	}
	if len(seg) > 0 && seg[len(seg)-1] == '\n' {
		return len(seg), ""
	}
	return len(seg), eol
}

// offsetOf converts a 1-based line and column (in characters, as yaml.v3 counts) to a byte
// offset.
func offsetOf(seg []byte, lines []int, line, col int) (int, bool) {
	if line < 1 || line > len(lines) || col < 1 {
		return 0, false
	}
	off := lines[line-1]
	if line == 1 && bytes.HasPrefix(seg, []byte("\xEF\xBB\xBF")) {
		off += 3
	}
	for c := 1; c < col; c++ {
		if off >= len(seg) || seg[off] == '\n' {
			return 0, false
		}
		_, w := utf8.DecodeRune(seg[off:])
		off += w
	}
	return off, true
}

// scalarExtent finds the bytes of scalar n in seg: start (at any tag or anchor), the start of
// the scalar text itself, and its end. It checks that the text is exactly the node's value.
func scalarExtent(seg []byte, lines []int, n *yaml.Node, flow bool) (start, valStart, end int, err error) {
	off, ok := offsetOf(seg, lines, n.Line, n.Column)
	if !ok {
		return 0, 0, 0, fmt.Errorf("position %d:%d outside the document", n.Line, n.Column)
	}
	start = off
	// skip a tag and/or an anchor
	for off < len(seg) && (seg[off] == '!' || seg[off] == '&') {
		for off < len(seg) && seg[off] != ' ' && seg[off] != '\t' && seg[off] != '\n' && seg[off] != '\r' {
			off++
		}
		for off < len(seg) && (seg[off] == ' ' || seg[off] == '\t') {
			off++
		}
	}
	valStart = off
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		if off >= len(seg) || seg[off] != '"' {
			return 0, 0, 0, fmt.Errorf("no double quote at %d:%d", n.Line, n.Column)
		}
		i := off + 1
		for ; i < len(seg); i++ {
			if seg[i] == '\\' {
				i++
				continue
			}
			if seg[i] == '"' {
				break
			}
		}
		if i >= len(seg) {
			return 0, 0, 0, errors.New("unterminated double-quoted scalar")
		}
		end = i + 1
		if bytes.ContainsAny(seg[off:end], "\r\n") {
			return 0, 0, 0, errors.New("multi-line quoted scalar")
		}
	case n.Style&yaml.SingleQuotedStyle != 0:
		if off >= len(seg) || seg[off] != '\'' {
			return 0, 0, 0, fmt.Errorf("no single quote at %d:%d", n.Line, n.Column)
		}
		i := off + 1
		for ; i < len(seg); i++ {
			if seg[i] == '\'' {
				if i+1 < len(seg) && seg[i+1] == '\'' {
					i++
					continue
				}
				break
			}
		}
		if i >= len(seg) {
			return 0, 0, 0, errors.New("unterminated single-quoted scalar")
		}
		end = i + 1
		if bytes.ContainsAny(seg[off:end], "\r\n") {
			return 0, 0, 0, errors.New("multi-line quoted scalar")
		}
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return 0, 0, 0, errors.New("block scalar")
	default:
		i := off
		for ; i < len(seg); i++ {
			c := seg[i]
			if c == '\n' || c == '\r' {
				break
			}
			if c == '#' && i > off && (seg[i-1] == ' ' || seg[i-1] == '\t') {
				break
			}
			if flow && (c == ',' || c == ']' || c == '}' || c == '[' || c == '{') {
				break
			}
			if c == ':' && i+1 < len(seg) && (seg[i+1] == ' ' || seg[i+1] == '\t' || seg[i+1] == '\n' || seg[i+1] == '\r' || (flow && seg[i+1] == ',')) {
				break
			}
		}
		end = i
		for end > off && (seg[end-1] == ' ' || seg[end-1] == '\t') {
			end--
		}
		if string(seg[off:end]) != n.Value {
			return 0, 0, 0, fmt.Errorf("plain scalar text %q is not its value %q (multi-line?)", seg[off:end], n.Value)
		}
	}
	return start, valStart, end, nil
}

func splice(seg []byte, from, to int, text string) []byte {
	out := make([]byte, 0, len(seg)-(to-from)+len(text))
	out = append(out, seg[:from]...)
	out = append(out, text...)
	out = append(out, seg[to:]...)
	return out
}

func isQuantity(s string) bool {
	_, err := resource.ParseQuantity(s)
	return err == nil
}

// sameValue compares a value found in Git with the one the detector saw: equal strings, or
// equal Kubernetes quantities ("1" and "1000m").
func sameValue(found, expected string) bool {
	if found == expected {
		return true
	}
	a, err1 := resource.ParseQuantity(found)
	b, err2 := resource.ParseQuantity(expected)
	return err1 == nil && err2 == nil && a.Cmp(b) == 0
}

// verify checks that after is before with exactly path set to to: the edited document parses,
// the field's scalar value is to (for an annotation or a label: decodes as the string to), and
// every other part of the decoded object is unchanged.
func verify(before, after []byte, path []string, to string) error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrVerify, pathString(path), fmt.Sprintf(format, a...))
	}
	root, err := parseSeg(after)
	if err != nil {
		return fail("edited document does not parse: %v", err)
	}
	n := root
	for _, k := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return fail("path missing after the edit")
		}
		n = lookup(n, k)
	}
	if n == nil || n.Kind != yaml.ScalarNode || n.Value != to {
		got := "<absent>"
		if n != nil {
			got = n.Value
		}
		return fail("value after the edit is %q, want %q", got, to)
	}
	var b, a any
	if err := yaml.Unmarshal(before, &b); err != nil {
		return fail("original document does not decode: %v", err)
	}
	if err := yaml.Unmarshal(after, &a); err != nil {
		return fail("edited document does not decode: %v", err)
	}
	newVal, ok := getPath(a, path)
	if !ok {
		return fail("decoded path missing after the edit")
	}
	if stringField(path) {
		if s, isStr := newVal.(string); !isStr || s != to {
			return fail("value after the edit decodes as %T %v, want the string %q", newVal, newVal, to)
		}
	}
	b = setPath(b, path, newVal)
	if !reflect.DeepEqual(a, b) {
		return fail("the edit changed more than the field")
	}
	return nil
}

func getPath(v any, path []string) (any, bool) {
	for _, k := range path {
		switch m := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = m[k]; !ok {
				return nil, false
			}
		case map[any]any:
			var ok bool
			if v, ok = m[k]; !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return v, true
}

func setPath(v any, path []string, val any) any {
	if len(path) == 0 {
		return val
	}
	switch m := v.(type) {
	case map[string]any:
		m[path[0]] = setPath(m[path[0]], path[1:], val)
		return m
	case map[any]any:
		m[path[0]] = setPath(m[path[0]], path[1:], val)
		return m
	default:
		return map[string]any{path[0]: setPath(nil, path[1:], val)}
	}
}

func pathString(p []string) string { return lifecycle.PathString(p) }
