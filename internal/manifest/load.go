package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// maxInputSize is the most one file (or stdin) may hold. A variable so tests can lower it.
var maxInputSize int64 = 64 << 20

// maxExpansion bounds what YAML aliases may expand a file to: its JSON form may be at most this
// many times the size of the file (plus a little), so a few bytes of nested aliases cannot
// exhaust memory.
const maxExpansion = 4

// Object is one Kubernetes object read from the input, with where it came from.
type Object struct {
	// File is the input's name as shown in messages ("<stdin>" for -).
	File string
	// Line is the line (1-based) the object's mapping starts on.
	Line int
	// Object is what the Decoder returned for the document's apiVersion and kind, filled in. Its
	// apiVersion and kind are set, also for items of a *List that leave them out. Its namespace
	// is as written: Load does not know which kinds are namespaced, so it does not default it.
	Object runtime.Object
}

// InputError is input that cannot be used. It prints as FILE:LINE: what is wrong, or FILE: what
// is wrong when no line applies (an unreadable file).
type InputError struct {
	File string
	Line int
	Msg  string
}

func (e *InputError) Error() string {
	if e.Line <= 0 {
		return e.File + ": " + e.Msg
	}
	return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
}

// displayName is how an -f argument is named in messages.
func displayName(arg string) string {
	if arg == "-" {
		return "<stdin>"
	}
	return arg
}

// ReadInput reads one -f argument, a file name or "-" for stdin, up to the size limit. It
// returns the name to show in messages and the content.
func ReadInput(arg string, stdin io.Reader) (name string, data []byte, err error) {
	name = displayName(arg)
	r := stdin
	if arg != "-" {
		f, err := os.Open(arg)
		if err != nil {
			return name, nil, &InputError{File: name, Msg: "cannot read: " + pathErrorText(err)}
		}
		defer f.Close()
		r = f
	}
	data, err = io.ReadAll(io.LimitReader(r, maxInputSize+1))
	if err != nil {
		return name, nil, &InputError{File: name, Msg: "cannot read: " + pathErrorText(err)}
	}
	if int64(len(data)) > maxInputSize {
		return name, nil, &InputError{File: name, Msg: fmt.Sprintf("input is larger than %d MiB; split it", maxInputSize>>20)}
	}
	return name, data, nil
}

// pathErrorText drops the file name from an *fs.PathError: the message already starts with it.
func pathErrorText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Decoder returns a new, empty object to decode a document of apiVersion and kind into, or nil to
// skip the document. Typed objects (pointers to API structs such as *corev1.Pod) are decoded
// strictly by type; *unstructured.Unstructured takes any content.
type Decoder func(apiVersion, kind string) runtime.Object

// Unstructured is a Decoder that decodes every kind into an *unstructured.Unstructured.
func Unstructured(_, _ string) runtime.Object { return &unstructured.Unstructured{} }

// Load reads Kubernetes objects from data, which is YAML (one or more documents separated by
// ---) or JSON. Documents of kind List (as kubectl get -o yaml prints) and *List kinds (as the
// API returns) contribute their items, which take the apiVersion and kind of a *List when they
// lack them. decode chooses, by apiVersion and kind, what each object is decoded into, or
// skips it; the decoded objects are returned in input order. name is used in errors, which are
// *InputError values pointing at the offending document or item; the first one ends the load.
//
// Decoding is strict about types (a quantity that does not parse, a string where a number
// belongs, a duplicate key) and lenient about unknown fields, which newer clusters add. The
// metadata of unstructured objects is checked as strictly as that of typed ones.
func Load(name string, data []byte, decode Decoder) ([]Object, error) {
	limit := maxExpansion*len(data) + 4096
	l := &loader{file: name, decode: decode, limit: limit, budget: limit}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return l.objects, nil
		}
		if err != nil {
			return nil, syntaxError(name, err, data)
		}
		if len(doc.Content) == 0 {
			continue
		}
		if err := l.object(doc.Content[0], nil); err != nil {
			return nil, err
		}
	}
}

type loader struct {
	file    string
	decode  Decoder
	objects []Object
	// limit is how many bytes of JSON this file's objects may expand to, budget what is left.
	limit, budget int
	// expanding holds the anchors being expanded, to refuse an alias inside its own anchor.
	expanding map[*yaml.Node]bool
}

func (l *loader) errorf(line int, format string, args ...any) error {
	return &InputError{File: l.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// listKind is the apiVersion and item kind a *List (not List) gives to items that lack them,
// as items of API list responses do.
type listKind struct{ apiVersion, kind string }

// object reads one document or List item.
func (l *loader) object(n *yaml.Node, list *listKind) error {
	n = deref(n)
	if isNull(n) {
		return nil // an empty document
	}
	if n.Kind != yaml.MappingNode {
		return l.errorf(n.Line, "expected a Kubernetes object (a mapping with apiVersion and kind), found %s", describe(n))
	}
	if len(n.Content) == 0 {
		return nil
	}
	apiVersion, err := l.stringField(n, "apiVersion")
	if err != nil {
		return err
	}
	kind, err := l.stringField(n, "kind")
	if err != nil {
		return err
	}
	inherited := false
	if list != nil {
		if apiVersion == "" {
			apiVersion, inherited = list.apiVersion, true
		}
		if kind == "" {
			kind, inherited = list.kind, true
		}
	}
	switch {
	case apiVersion == "" && kind == "":
		return l.errorf(n.Line, "not a Kubernetes object: apiVersion and kind are missing")
	case apiVersion == "":
		return l.errorf(n.Line, "%s: apiVersion is missing", clip(kind))
	case kind == "":
		return l.errorf(n.Line, "kind is missing (apiVersion %s)", clip(apiVersion))
	}

	items := field(n, "items")
	if kind == "List" || (strings.HasSuffix(kind, "List") && items != nil) {
		return l.list(apiVersion, kind, items)
	}

	obj := l.decode(apiVersion, kind)
	if obj == nil {
		return nil
	}
	what := kind + nameOf(n)
	var buf bytes.Buffer
	if err := l.writeJSON(&buf, n); err != nil {
		if errors.Is(err, errTooLarge) {
			return l.errorf(n.Line, "%s: the input expands to more than %d bytes (too many aliases?)", what, l.limit)
		}
		return err
	}
	l.budget -= buf.Len()
	if err := decodeJSON(buf.Bytes(), obj); err != nil {
		return l.errorf(n.Line, "%s: %s", what, jsonErrorText(err))
	}
	setType(obj, apiVersion, kind, inherited)
	l.objects = append(l.objects, Object{File: l.file, Line: n.Line, Object: obj})
	return nil
}

// setType gives obj the apiVersion and kind it was decoded as. An object that states them has
// them from decoding already, but items of a *List may leave them out. Unstructured objects take
// them verbatim; typed objects through their TypeMeta, which holds only a valid apiVersion.
func setType(obj runtime.Object, apiVersion, kind string, inherited bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		return
	}
	if inherited {
		obj.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
	}
}

// decodeJSON decodes one object. Typed objects get encoding/json, as the API types expect.
// Unstructured content is decoded as the API machinery does (integers stay int64); its metadata
// is decoded into metav1.ObjectMeta too, only to find values of the wrong type (a number as an
// annotation), which the unstructured accessors would silently read as missing.
func decodeJSON(data []byte, obj runtime.Object) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return json.Unmarshal(data, obj)
	}
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return err
	}
	var content map[string]any
	if err := utiljson.Unmarshal(data, &content); err != nil {
		return err
	}
	u.Object = content
	return nil
}

// list reads the items of a List or *List.
func (l *loader) list(apiVersion, kind string, items *yaml.Node) error {
	items = deref(items)
	if items == nil || isNull(items) {
		return nil
	}
	if items.Kind != yaml.SequenceNode {
		return l.errorf(items.Line, "%s: items must be a list, found %s", clip(kind), describe(items))
	}
	var inherit *listKind
	if kind != "List" {
		inherit = &listKind{apiVersion: apiVersion, kind: strings.TrimSuffix(kind, "List")}
	}
	for _, item := range items.Content {
		if err := l.object(item, inherit); err != nil {
			return err
		}
	}
	return nil
}

// stringField returns a scalar field of a mapping ("" when absent or null).
func (l *loader) stringField(m *yaml.Node, key string) (string, error) {
	v := deref(field(m, key))
	if v == nil || isNull(v) {
		return "", nil
	}
	if v.Kind != yaml.ScalarNode {
		return "", l.errorf(v.Line, "%s must be a string, found %s", key, describe(v))
	}
	return v.Value, nil
}

// field returns the value of key in mapping m, or nil.
func field(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := deref(m.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// nameOf renders " namespace/name" (or " name") from an object's metadata for messages.
func nameOf(obj *yaml.Node) string {
	meta := deref(field(obj, "metadata"))
	str := func(key string) string {
		if v := deref(field(meta, key)); v != nil && v.Kind == yaml.ScalarNode && !isNull(v) {
			return clip(v.Value)
		}
		return ""
	}
	name, ns := str("name"), str("namespace")
	switch {
	case name == "":
		return ""
	case ns == "":
		return " " + name
	default:
		return " " + ns + "/" + name
	}
}

// clip shortens text from the input for messages.
func clip(s string) string { return clipTo(s, 64) }

func clipTo(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// deref follows an alias to its anchor.
func deref(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(clip(n.Value))
	}
	return "an unexpected YAML node"
}

var errTooLarge = errors.New("expansion limit reached")

// writeJSON converts a YAML node to JSON, the form the API types know how to decode. Scalars
// keep their YAML type (an unquoted 3 is a number, "3" a string) so that a wrong type is an
// error when the typed object is decoded, as it is for kubectl.
func (l *loader) writeJSON(b *bytes.Buffer, n *yaml.Node) error {
	if b.Len() > l.budget {
		return errTooLarge // reported for the whole object: the node may be deep inside an anchor
	}
	switch n.Kind {
	case yaml.AliasNode:
		target := n.Alias
		if target == nil {
			return l.errorf(n.Line, "unknown alias *%s", clip(n.Value))
		}
		if l.expanding[target] {
			return l.errorf(n.Line, "alias *%s refers to itself", clip(n.Value))
		}
		if l.expanding == nil {
			l.expanding = map[*yaml.Node]bool{}
		}
		l.expanding[target] = true
		defer delete(l.expanding, target)
		return l.writeJSON(b, target)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			b.WriteString("null")
			return nil
		}
		return l.writeJSON(b, n.Content[0])
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := l.writeJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case yaml.MappingNode:
		b.WriteByte('{')
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				return l.errorf(k.Line, "a mapping key must be a string, found %s", describe(k))
			}
			if k.ShortTag() == "!!merge" {
				return l.errorf(k.Line, "merge keys (<<) are not supported")
			}
			if seen[k.Value] {
				return l.errorf(k.Line, "duplicate key %q", clip(k.Value))
			}
			seen[k.Value] = true
			if i > 0 {
				b.WriteByte(',')
			}
			key, _ := json.Marshal(k.Value)
			b.Write(key)
			b.WriteByte(':')
			if err := l.writeJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case yaml.ScalarNode:
		return l.writeScalar(b, n)
	}
	return l.errorf(n.Line, "unexpected YAML node")
}

func (l *loader) writeScalar(b *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		b.WriteString("null")
		return nil
	case "!!int", "!!float", "!!bool":
		if c := n.Value; c != "" && (c[0] == '-' || c[0] >= '0' && c[0] <= '9') && json.Valid([]byte(c)) {
			b.WriteString(c) // already a JSON number: keep every digit
			return nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return l.errorf(n.Line, "cannot read %q: %v", clip(n.Value), err)
		}
		out, err := json.Marshal(v)
		if err != nil {
			return l.errorf(n.Line, "%q cannot be represented in JSON", clip(n.Value))
		}
		b.Write(out)
		return nil
	}
	// Strings, timestamps (which the API types parse themselves), binary and custom tags.
	out, _ := json.Marshal(n.Value)
	b.Write(out)
	return nil
}

// jsonErrorText makes a decoding error readable without Go type names where it can.
func jsonErrorText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s: cannot use %s as %s", te.Field, article(te.Value), te.Type)
	}
	// Errors of the API types' own decoders (quantities, times) may quote the input.
	return clipTo(strings.TrimPrefix(err.Error(), "json: "), 300)
}

func article(what string) string {
	if what == "" {
		return "this value"
	}
	if strings.ContainsRune("aeiou", rune(what[0])) {
		return "an " + what
	}
	return "a " + what
}

// yamlLine matches the position go.yaml.in/yaml/v3 puts into syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are the messages of the YAML parser proper. The library reports their line
// zero-based (and leaves it out on the first line), unlike the scanner's, which it reports
// one-based (see (*parser).fail in go.yaml.in/yaml/v3), and it reports where the enclosing
// collection starts rather than the mistake: problemLine searches from there.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// syntaxError turns a YAML decoding error into an *InputError with a one-based line.
func syntaxError(file string, err error, data []byte) error {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	switch {
	case parserProblems[msg]:
		line = problemLine(data, line+1)
	case line == 0 && strings.HasPrefix(msg, "unknown anchor"):
		// Reported without a position; leave it out rather than guess.
	case line == 0:
		// Reader errors (bad encoding, control characters) carry no line: find the character.
		// Scanner errors without a line are on the first line.
		line = badCharLine(data)
	}
	return &InputError{File: file, Line: line, Msg: "invalid YAML: " + clipTo(msg, 200)}
}

// problemLine finds the line of a parser error. go.yaml.in/yaml/v3 reports where the enclosing
// collection starts ("while parsing a block mapping"), which can be far above the mistake (a
// key indented one space too far). The mistake is on the first line whose inclusion makes the
// document fail to parse. It is searched from the reported line on, first with growing steps
// (mistakes are usually close), then by bisection; each probe parses the document up to a
// line. The work is bounded: when a few times the input's size has been parsed, the search
// stops at the nearest failing line found, or at the reported line.
func problemLine(data []byte, from int) int {
	ends := lineEnds(data)
	if len(data) > 0 && (len(ends) == 0 || ends[len(ends)-1] != len(data)) {
		ends = append(ends, len(data)) // the last line has no line break
	}
	if len(ends) == 0 {
		return 1
	}
	from = max(1, min(from, len(ends)))

	// Parse from the start of the document that holds the reported line: a line starting
	// with "---" always starts a document, even after a block scalar.
	start := 0
	for line := from; line >= 2; line-- {
		l := data[ends[line-2]:ends[line-1]]
		if bytes.HasPrefix(l, []byte("---")) && (len(l) == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r' || l[3] == '\n') {
			start = ends[line-2]
			break
		}
	}

	budget := 4*len(data) + 4<<20
	lo, hi := from, len(ends) // the mistake is on a line in [lo, hi]
	found := false            // whether a prefix ending at hi is known to fail
	step := 1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if !found {
			mid = min(lo+step-1, hi-1)
			step *= 2
		}
		prefix := data[start:ends[mid-1]]
		if budget -= len(prefix); budget < 0 {
			break
		}
		if parses(prefix) {
			lo = mid + 1
		} else {
			hi, found = mid, true
		}
	}
	if lo < hi && !found {
		return from
	}
	return hi
}

// parses reports whether data is syntactically valid YAML.
func parses(data []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return errors.Is(err, io.EOF)
		}
	}
}

// lineEnds returns the offset just past every line break, counting breaks as YAML does: CRLF,
// CR, LF, NEL, LS and PS. Line n (1-based) ends at lineEnds(data)[n-1].
func lineEnds(data []byte) []int {
	var ends []int
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		i += size
		switch r {
		case '\r':
			if i < len(data) && data[i] == '\n' {
				i++
			}
			ends = append(ends, i)
		case '\n', 0x85, 0x2028, 0x2029:
			ends = append(ends, i)
		}
	}
	return ends
}

// badCharLine returns the line of the first byte YAML does not accept (invalid UTF-8 or a
// control character), or 1.
func badCharLine(data []byte) int {
	line := 1
	ends := lineEnds(data)
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if (r == utf8.RuneError && size == 1) || !yamlPrintable(r) {
			return line
		}
		i += size
		for line <= len(ends) && ends[line-1] <= i {
			line++
		}
	}
	return 1
}

// yamlPrintable is the character set YAML allows in a stream.
func yamlPrintable(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r' || r == 0x85:
		return true
	case r >= 0x20 && r <= 0x7E:
		return true
	case r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}
