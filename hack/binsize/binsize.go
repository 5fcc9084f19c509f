package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Std names the standard library (and the runtime's own symbols) in a report.
const Std = "std"

// Unattributed names symbols whose name does not say which package they belong to (most are
// composite types such as map[string]*T, and linker-made tables).
const Unattributed = "(unattributed)"

// Modules attributes package paths and symbol names to the modules the binary was built from.
type Modules struct {
	main  string
	paths []string // longest first, so the first match is the most specific module
}

// NewModules returns the attributor for the main module and its dependencies (as
// debug/buildinfo lists them). Package main's symbols (nm names them "main.") are the main
// module's.
func NewModules(main string, deps []string) *Modules {
	m := &Modules{main: main, paths: append([]string{main}, deps...)}
	sort.Slice(m.paths, func(i, j int) bool { return len(m.paths[i]) > len(m.paths[j]) })
	return m
}

// OfPackage returns the module that holds package path pkg: the longest module path that is
// pkg or a parent directory of it; Std for a path whose first element has no dot (the standard
// library and its vendored golang.org/x copies); Unattributed otherwise.
func (m *Modules) OfPackage(pkg string) string {
	if pkg == "main" {
		return m.main
	}
	for _, mod := range m.paths {
		if pkg == mod || strings.HasPrefix(pkg, mod+"/") {
			return mod
		}
	}
	first, _, _ := strings.Cut(pkg, "/")
	if isIdent(first) {
		return Std
	}
	return Unattributed
}

// OfSymbol returns the module that defines symbol name, as `go tool nm` prints it:
// "k8s.io/api/core/v1.(*Pod).String", "type:*helm.sh/helm/v3/pkg/action.Uninstall",
// "go:itab.*k8s.io/client-go/rest.Config,fmt.Stringer" (the itab's concrete type decides),
// "gopkg.in/yaml.v3.Unmarshal" (a module path may contain dots after its last slash),
// "runtime.mallocgc" (Std), "main.main" (the main module).
func (m *Modules) OfSymbol(name string) string {
	s := name
	switch {
	case strings.HasPrefix(s, "type:"):
		s = s[len("type:"):]
	case strings.HasPrefix(s, "go:itab."):
		s = s[len("go:itab."):]
	case strings.HasPrefix(s, "go:"):
		return Unattributed // the linker's tables and string data (go:func.*, go:string.*)
	}
	s = strings.TrimLeft(s, "*")
	if strings.HasPrefix(s, "main.") {
		return m.main
	}
	for _, mod := range m.paths {
		if strings.HasPrefix(s, mod) && len(s) > len(mod) && (s[len(mod)] == '/' || s[len(mod)] == '.') {
			return mod
		}
	}
	// Not in a module: the standard library when the first path element is a plain word. The
	// first element ends at the first slash when what precedes it is a path ("net/http.Get",
	// "k8s.io/api/..."), else at the first dot ("runtime.mallocgc").
	first := s
	if i := strings.IndexByte(s, '/'); i > 0 && isPath(s[:i]) {
		first = s[:i]
	} else if i := strings.IndexByte(s, '.'); i > 0 {
		first = s[:i]
	}
	if isIdent(first) {
		return Std
	}
	return Unattributed
}

// isPath reports whether s could be a path element: letters, digits, dots, dashes, underscores.
func isPath(s string) bool {
	for _, c := range s {
		if !(c == '.' || c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// isIdent reports whether s is a non-empty word of letters, digits and underscores: the first
// element of a standard library path ("net", "internal", "vendor"), never a domain.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Symbol is one line of `go tool nm -size`.
type Symbol struct {
	Addr uint64
	Size int64
	// Type is nm's letter: T text, R read-only data, D data, B zeroed data (not in the file),
	// U undefined.
	Type byte
	Name string
}

// ParseNM reads the output of `go tool nm -size`: "<address> <size> <type> <name>", where the
// name may contain spaces (func types). Undefined symbols ("<size> U <name>", no address),
// nameless ones and the "local." copies of exported symbols are skipped.
func ParseNM(r io.Reader) ([]Symbol, error) {
	var out []Symbol
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		fields, name := cutFields(line, 3)
		switch {
		case len(fields) == 3 && fields[1] == "U", len(fields) == 3 && fields[2] == "_" && name == "":
			continue // undefined, or nameless
		case strings.HasPrefix(name, "local."):
			continue // a copy of an exported symbol, made when a binary exports them all (cgo and package plugin)
		}
		if len(fields) < 3 || len(fields[2]) != 1 || name == "" {
			return nil, fmt.Errorf("nm line %d: want address, size, type and name, got %q", n, line)
		}
		addr, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("nm line %d: address %q is not hexadecimal", n, fields[0])
		}
		size, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil || size < 0 {
			return nil, fmt.Errorf("nm line %d: size %q is not a number of bytes", n, fields[1])
		}
		out = append(out, Symbol{Addr: addr, Size: size, Type: fields[2][0], Name: name})
	}
	return out, sc.Err()
}

// cutFields splits the first n space-separated fields off s and returns them and the rest,
// its inner spaces kept.
func cutFields(s string, n int) (fields []string, rest string) {
	rest = strings.TrimLeft(s, " ")
	for len(fields) < n && rest != "" {
		f, r, _ := strings.Cut(rest, " ")
		fields = append(fields, f)
		rest = strings.TrimLeft(r, " ")
	}
	return fields, rest
}

// Init is one package's initialisation, as GODEBUG=inittrace=1 reports it.
type Init struct {
	Package string
	ClockMS float64
	Bytes   int64
	Allocs  int64
}

// ParseInitTrace reads GODEBUG=inittrace=1's lines from a program's standard error:
// "init k8s.io/api/core/v1 @71 ms, 0.17 ms clock, 96976 bytes, 535 allocs". Other lines
// (the program's own) are skipped; a line that starts so but does not parse is an error.
func ParseInitTrace(r io.Reader) ([]Init, error) {
	var out []Init
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "init ") || !strings.Contains(line, " ms clock, ") {
			continue
		}
		var in Init
		var at float64
		if _, err := fmt.Sscanf(line, "init %s @%g ms, %g ms clock, %d bytes, %d allocs", &in.Package, &at, &in.ClockMS, &in.Bytes, &in.Allocs); err != nil {
			return nil, fmt.Errorf("inittrace line %q: %w", line, err)
		}
		out = append(out, in)
	}
	return out, sc.Err()
}

// Cost is what one module (or package) adds to the binary and its start.
type Cost struct {
	Name string
	// Text is code (nm type T); Data read-only and initialised data (R, D). Zeroed data (B)
	// takes no room in the file and is left out.
	Text, Data int64
	Symbols    int
	// Inits counts the packages with an init that ran; ClockMS, Bytes and Allocs are their sums.
	Inits         int
	ClockMS       float64
	Bytes, Allocs int64
}

// BySize sums symbols by module. inFile reports whether an address is in a section the file
// holds: nm types some zeroed data D (the FIPS DRBG's 32 MiB buffer), which takes no room in the
// file and is never paged in from it.
func BySize(m *Modules, syms []Symbol, inFile func(addr uint64) bool) map[string]*Cost {
	out := map[string]*Cost{}
	for _, s := range syms {
		if inFile != nil && !inFile(s.Addr) {
			continue
		}
		var text, data int64
		switch s.Type {
		case 'T', 't':
			text = s.Size
		case 'R', 'r', 'D', 'd':
			data = s.Size
		default:
			continue
		}
		c := entry(out, m.OfSymbol(s.Name))
		c.Text += text
		c.Data += data
		c.Symbols++
	}
	return out
}

// AddInits adds each package's initialisation to its module's Cost in costs.
func AddInits(m *Modules, costs map[string]*Cost, inits []Init) {
	for _, in := range inits {
		c := entry(costs, m.OfPackage(in.Package))
		c.Inits++
		c.ClockMS += in.ClockMS
		c.Bytes += in.Bytes
		c.Allocs += in.Allocs
	}
}

func entry(costs map[string]*Cost, name string) *Cost {
	c, ok := costs[name]
	if !ok {
		c = &Cost{Name: name}
		costs[name] = c
	}
	return c
}

// Top returns the n largest costs by key, largest first, ties by name; n <= 0 returns all.
func Top(costs map[string]*Cost, n int, key func(*Cost) float64) []*Cost {
	out := make([]*Cost, 0, len(costs))
	for _, c := range costs {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if ki, kj := key(out[i]), key(out[j]); ki != kj {
			return ki > kj
		}
		return out[i].Name < out[j].Name
	})
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// Total sums costs.
func Total(costs map[string]*Cost) Cost {
	t := Cost{Name: "total"}
	for _, c := range costs {
		t.Text += c.Text
		t.Data += c.Data
		t.Symbols += c.Symbols
		t.Inits += c.Inits
		t.ClockMS += c.ClockMS
		t.Bytes += c.Bytes
		t.Allocs += c.Allocs
	}
	return t
}

// MB writes bytes in decimal megabytes (as ls and the binary's size are usually quoted).
func MB(b int64) string { return strconv.FormatFloat(float64(b)/1e6, 'f', 1, 64) }

// MiB writes KiB (what the kernel reports of RSS) in MiB.
func MiB(kib int64) string { return strconv.FormatFloat(float64(kib)/1024, 'f', 1, 64) }

// Usage is what one process held at its exit, from /proc/<pid>/status, in KiB.
type Usage struct {
	// Peak is VmHWM, the high-water mark of the resident set.
	Peak int64
	// Anon is RssAnon (heap, stacks, the runtime's own); File is RssFile, the pages of the
	// binary mapped from the page cache: how many depends on the kernel's fault-around and the
	// page cache's folio sizes, not only on the program, which is why they are told apart.
	Anon, File int64
}

// ParseStatus reads VmHWM, RssAnon and RssFile from /proc/<pid>/status.
func ParseStatus(r io.Reader) (Usage, error) {
	var u Usage
	seen := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch key {
		case "VmHWM":
			dst = &u.Peak
		case "RssAnon":
			dst = &u.Anon
		case "RssFile":
			dst = &u.File
		default:
			continue
		}
		num, unit, _ := strings.Cut(strings.TrimSpace(val), " ")
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || unit != "kB" {
			return Usage{}, fmt.Errorf("%s: %q is not a number of kB", key, strings.TrimSpace(val))
		}
		*dst = n
		seen++
	}
	if err := sc.Err(); err != nil {
		return Usage{}, err
	}
	if seen != 3 {
		return Usage{}, errors.New("want VmHWM, RssAnon and RssFile in the status")
	}
	return u, nil
}

// Median returns the median of xs (the lower middle for an even count), 0 for none.
func Median(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)/2]
}
