package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
)

func main() {
	kustos := flag.String("kustos", "bin/kustos", "the kustos binary to measure (with its symbol table: built without -ldflags=-s)")
	top := flag.Int("top", 15, "how many modules each table lists")
	runs := flag.Int("runs", 5, "how often each command runs; the report gives the median peak RSS")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := report(ctx, os.Stdout, *kustos, *top, *runs)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "binsize:", err)
		os.Exit(1)
	}
}

// report measures bin and writes the markdown report to w.
func report(ctx context.Context, w io.Writer, bin string, top, runs int) error {
	if runs < 1 {
		return fmt.Errorf("-runs %d: want at least 1", runs)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("reading the build information of %s: %w", bin, err)
	}
	deps := make([]string, 0, len(info.Deps))
	for _, d := range info.Deps {
		deps = append(deps, d.Path)
	}
	mods := NewModules(info.Main.Path, deps)
	st, err := os.Stat(bin)
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "## %s\n\n", bin)
	fmt.Fprintf(w, "%s MB on disk, %s, %s, %d modules linked.\n\n", MB(st.Size()), info.GoVersion, settings(info), len(info.Deps)+1)
	if err := sections(w, bin); err != nil {
		return err
	}

	costs := map[string]*Cost{}
	syms, nmErr := nm(ctx, bin)
	if nmErr == nil {
		inFile, err := inFileFunc(bin)
		if err != nil {
			return err
		}
		costs = BySize(mods, syms, inFile)
	}
	inits, err := initTrace(ctx, bin)
	if err != nil {
		return err
	}
	AddInits(mods, costs, inits)
	total := Total(costs)

	if nmErr != nil {
		fmt.Fprintf(w, "No size by module: %v\n\n", nmErr)
	} else {
		fmt.Fprintf(w, "### Size by module (top %d by text)\n\n", top)
		fmt.Fprintf(w, "Text is code, data read-only and initialised data, from `go tool nm -size`; the function tables (.gopclntab) and type links are not attributed. Total text %s MB, data %s MB.\n\n", MB(total.Text), MB(total.Data))
		costTable(w, Top(costs, top, func(c *Cost) float64 { return float64(c.Text) }))
	}
	fmt.Fprintf(w, "### Package initialisation by module (top %d by allocation)\n\n", top)
	fmt.Fprintf(w, "GODEBUG=inittrace=1 of `%s version`: %d packages ran an init, %.1f ms in all (clock), %s MB allocated in %d allocations.\n\n",
		bin, total.Inits, total.ClockMS, MB(total.Bytes), total.Allocs)
	costTable(w, Top(costs, top, func(c *Cost) float64 { return float64(c.Bytes) }))

	fmt.Fprintf(w, "### Memory at exit\n\n| command | peak RSS (MiB) | anonymous (MiB) | the binary's pages (MiB) | runs, peak (MiB) |\n|---|---|---|---|---|\n")
	for _, args := range [][]string{{"version"}, {"run", "--help"}} {
		us, err := usages(ctx, bin, args, runs)
		if err != nil {
			return err
		}
		var peak, anon, file []int64
		all := make([]string, len(us))
		for i, u := range us {
			peak, anon, file = append(peak, u.Peak), append(anon, u.Anon), append(file, u.File)
			all[i] = MiB(u.Peak)
		}
		fmt.Fprintf(w, "| `kustos %s` | %s | %s | %s | %s |\n", strings.Join(args, " "), MiB(Median(peak)), MiB(Median(anon)), MiB(Median(file)), strings.Join(all, ", "))
	}
	fmt.Fprintf(w, "\nMedians of %d runs, read from /proc/<pid>/status as each exits (VmHWM, RssAnon, RssFile); %d CPUs, load average %s. "+
		"How many of the binary's pages a run maps depends on the page cache (how the file was written, what read it since), so compare binaries written the same way.\n", runs, runtime.NumCPU(), loadavg())
	return nil
}

// settings names the build settings that change what is linked and how it is loaded.
func settings(info *buildinfo.BuildInfo) string {
	var out []string
	for _, s := range info.Settings {
		switch s.Key {
		case "CGO_ENABLED", "-tags", "-ldflags", "-trimpath":
			out = append(out, s.Key+"="+s.Value)
		}
	}
	if len(out) == 0 {
		return "no build settings recorded"
	}
	return strings.Join(out, " ")
}

// sections reports the ELF sections that make the file's size: code, the function tables,
// dynamic symbols (a cgo binary that links package plugin exports every symbol) and DWARF.
func sections(w io.Writer, bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("reading %s as ELF: %w", bin, err)
	}
	defer func() { _ = f.Close() }()
	var text, rodata, pcln, dyn, dwarf int64
	for _, s := range f.Sections {
		n := int64(s.Size)
		switch {
		case s.Name == ".text":
			text = n
		case s.Name == ".rodata":
			rodata = n
		case s.Name == ".gopclntab":
			pcln = n
		case s.Name == ".dynsym" || s.Name == ".dynstr" || s.Name == ".gnu.hash" || s.Name == ".gnu.version":
			dyn += n
		case strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_"):
			dwarf += n
		}
	}
	interp := "statically linked"
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp = "dynamically linked"
		}
	}
	fmt.Fprintf(w, "| section | MB |\n|---|---|\n| .text (code) | %s |\n| .rodata | %s |\n| .gopclntab (function tables) | %s |\n| dynamic symbols (.dynsym, .dynstr, .gnu.hash, .gnu.version) | %s |\n| DWARF (.debug_*) | %s |\n\nThe binary is %s.\n\n",
		MB(text), MB(rodata), MB(pcln), MB(dyn), MB(dwarf), interp)
	return nil
}

// inFileFunc reports whether an address lies in a section bin's file holds (not zeroed data).
func inFileFunc(bin string) (func(uint64) bool, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("reading %s as ELF: %w", bin, err)
	}
	defer func() { _ = f.Close() }()
	type span struct{ lo, hi uint64 }
	var spans []span
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOBITS && s.Flags&elf.SHF_ALLOC != 0 {
			spans = append(spans, span{s.Addr, s.Addr + s.Size})
		}
	}
	return func(a uint64) bool {
		for _, s := range spans {
			if a >= s.lo && a < s.hi {
				return true
			}
		}
		return false
	}, nil
}

func costTable(w io.Writer, costs []*Cost) {
	fmt.Fprintf(w, "| module | text MB | data MB | inits | init ms | init MB allocated |\n|---|---|---|---|---|---|\n")
	for _, c := range costs {
		fmt.Fprintf(w, "| %s | %s | %s | %d | %.1f | %s |\n", c.Name, MB(c.Text), MB(c.Data), c.Inits, c.ClockMS, MB(c.Bytes))
	}
	fmt.Fprintln(w)
}

// nm reads bin's symbols with `go tool nm -size`.
func nm(ctx context.Context, bin string) ([]Symbol, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "tool", "nm", "-size", bin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "no symbol") {
			return nil, fmt.Errorf("%s has no symbol table (built with -ldflags=-s?): %s", bin, msg)
		}
		return nil, fmt.Errorf("go tool nm -size %s: %w: %s", bin, err, msg)
	}
	return ParseNM(&stdout)
}

// initTrace runs `bin version` with GODEBUG=inittrace=1 and reads its report.
func initTrace(ctx context.Context, bin string) ([]Init, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s version: %w: %s", bin, err, lastLine(stderr.String()))
	}
	inits, err := ParseInitTrace(&stderr)
	if err == nil && len(inits) == 0 {
		err = errors.New("no GODEBUG=inittrace=1 lines on its standard error")
	}
	if err != nil {
		return nil, fmt.Errorf("%s version: %w", bin, err)
	}
	return inits, nil
}

// usages runs bin with args n times and returns each run's Usage.
func usages(ctx context.Context, bin string, args []string, n int) ([]Usage, error) {
	out := make([]Usage, 0, n)
	for range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		u, err := usage(ctx, bin, args)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
