package kustosproc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {1, time.Millisecond}} {
		if got := Percentile(ds, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if got := Percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("single sample: %v", got)
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("empty: %v", got)
	}
	if ds[0] != 100*time.Millisecond {
		t.Error("Percentile sorted its argument")
	}
}

func TestReadProcSelf(t *testing.T) {
	s, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSSKiB <= 0 || s.HWMKiB < s.RSSKiB {
		t.Errorf("implausible memory: %+v", s)
	}
}

func TestParseProc(t *testing.T) {
	status := []byte("Name:\tkustos\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nRssAnon:\t    6144 kB\nThreads:\t9\n")
	// A command name with spaces and parentheses; utime 250 and stime 50 ticks.
	stat := []byte("42 (ku) (s tos) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 100 0 0")
	s, err := parseProc(42, status, stat)
	if err != nil {
		t.Fatal(err)
	}
	if s.RSSKiB != 10240 || s.HWMKiB != 20480 || s.CPU != 3*time.Second || s.RSSMiB() != 10 || s.HWMMiB() != 20 || s.AnonMiB() != 6 {
		t.Errorf("got %+v", s)
	}
	for _, bad := range []struct{ status, stat string }{
		{"VmRSS:\t1 kB\n", string(stat)},                                     // no VmHWM: exited
		{"VmHWM:\t1 MB\n", string(stat)},                                     // unit
		{"VmHWM:\t1 kB\n", "42 kustos S 1"},                                  // no ")"
		{"VmHWM:\t1 kB\n", "42 (kustos) S 1 2 3"},                            // too short
		{"VmHWM:\t1 kB\n", strings.Replace(string(stat), " 250 ", " x ", 1)}, // utime
	} {
		if _, err := parseProc(42, []byte(bad.status), []byte(bad.stat)); err == nil {
			t.Errorf("%q / %q: no error", bad.status, bad.stat)
		}
	}
}

func TestCleanEnv(t *testing.T) {
	got := CleanEnv([]string{"PATH=/bin", "GOMAXPROCS=1", "GOGC=off", "GOMEMLIMIT=1GiB", "KUBECONFIG=/x", "GOFLAGS=-v", "HOME=/root"})
	if strings.Join(got, " ") != "PATH=/bin GOFLAGS=-v HOME=/root" {
		t.Errorf("got %q", got)
	}
}

// fakeKustos writes a shell script standing in for the binary: it prints its arguments and
// environment, then waits for SIGTERM and exits with code.
func fakeKustos(t *testing.T, onTerm string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kustos")
	script := "#!/bin/sh\necho \"args: $*\"\necho \"gogc: ${GOGC:-unset}\"\ntrap '" + onTerm + "' TERM\nwhile :; do sleep 0.05; done\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStartStop(t *testing.T) {
	t.Setenv("GOGC", "5")
	logPath := filepath.Join(t.TempDir(), "kustos.log")
	p, err := Start(fakeKustos(t, "exit 0"), []string{"--a=1", "--b"}, logPath)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := p.Running(); err != nil {
		t.Fatal(err)
	}
	if s, err := p.Sample(); err != nil || s.HWMKiB == 0 {
		t.Fatalf("sample: %+v, %v", s, err)
	}
	exit, _, err := p.Stop(5 * time.Second)
	if err != nil || exit != "exit status 0" {
		t.Fatalf("stop: %q, %v", exit, err)
	}
	out, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "args: run --a=1 --b\n") || !strings.Contains(string(out), "gogc: unset\n") {
		t.Errorf("output: %q", out)
	}
	if err := p.Running(); err == nil {
		t.Error("Running after Stop: no error")
	}
}

func TestStopReportsFailures(t *testing.T) {
	dir := t.TempDir()
	p, err := Start(fakeKustos(t, "exit 3"), nil, filepath.Join(dir, "a.log"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if exit, _, err := p.Stop(5 * time.Second); err == nil || exit != "exit status 3" || !strings.Contains(err.Error(), "after SIGTERM") {
		t.Errorf("exit 3 on SIGTERM: %q, %v", exit, err)
	}

	p, err = Start(fakeKustos(t, ""), nil, filepath.Join(dir, "b.log")) // ignores SIGTERM
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, _, err := p.Stop(300 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("SIGTERM ignored: %v", err)
	}

	p, err = Start("/bin/true", nil, filepath.Join(dir, "c.log"))
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	if _, err := p.Sample(); err == nil {
		t.Error("Sample of an exited process: no error")
	}
	if _, _, err := p.Stop(time.Second); err == nil || !strings.Contains(err.Error(), "exited early") {
		t.Errorf("stop after an early exit: %v", err)
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("1\n2\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	Tail(&b, path, 2)
	if !strings.Contains(b.String(), "last 2 lines") || !strings.HasSuffix(b.String(), "    | 2\n    | 3\n") {
		t.Errorf("got %q", b.String())
	}
	b.Reset()
	Tail(&b, path+".missing", 2)
	if !strings.Contains(b.String(), "cannot read") {
		t.Errorf("missing file: %q", b.String())
	}
}
