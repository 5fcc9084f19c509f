// Package kustosproc is what the control-plane benchmarks (bench/controlplane, bench/cleaners,
// bench/expiry, bench/inactivity) share about the process they measure: starting `kustos run` as
// a separate process with Go's runtime defaults, reading its memory and CPU time from /proc while
// it runs, stopping it with a grace period (its CPU time over its whole life, shutdown included,
// from getrusage), and the nearest-rank percentile their tables report.
package kustosproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on every Linux
// architecture Kubernetes runs on (sysconf(_SC_CLK_TCK)).
const clockTicks = 100

// Process is a running `kustos run`.
type Process struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	waitErr error         // valid after exited is closed
}

// Start starts `<path> run <args...>` as a separate process with Go's defaults for GOMAXPROCS
// and GOMEMLIMIT and no GOGC (so Kustos's own --gogc sets the garbage-collection target, as in
// a cluster where nobody sets GOGC), without KUBECONFIG (so that only --kubeconfig counts), its standard
// output and error going to the file logPath (created or truncated). The process gets SIGKILL
// if the benchmark dies first.
func Start(path string, args []string, logPath string) (*Process, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, append([]string{"run"}, args...)...)
	cmd.Env = CleanEnv(os.Environ())
	cmd.Stdout, cmd.Stderr = f, f
	// Do not outlive the benchmark if it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

// CleanEnv drops the variables that would change the Go runtime's defaults, and KUBECONFIG so
// that only --kubeconfig counts.
func CleanEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOMAXPROCS", "GOGC", "GOMEMLIMIT", "KUBECONFIG":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Running reports an error if the process has exited.
func (p *Process) Running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("kustos exited early: %s", p.exitString())
	default:
		return nil
	}
}

// Sample reads /proc while the process runs; an error if it has exited.
func (p *Process) Sample() (Sample, error) {
	if err := p.Running(); err != nil {
		return Sample{}, err
	}
	return ReadProc(p.Pid())
}

// Stop sends SIGTERM and waits up to grace for the exit, then kills. It returns the exit status
// and the CPU time of the whole life of the process, shutdown included (getrusage). The error
// says if the process had exited before Stop, did not stop in time, or exited unsuccessfully.
func (p *Process) Stop(grace time.Duration) (exit string, cpu time.Duration, err error) {
	select {
	case <-p.exited:
		err = fmt.Errorf("kustos exited early: %s", p.exitString())
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
			if ps := p.cmd.ProcessState; ps == nil || !ps.Success() {
				err = fmt.Errorf("kustos exited with %s after SIGTERM", p.exitString())
			}
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.exited
			err = fmt.Errorf("kustos did not stop within %s of SIGTERM; killed", grace)
		}
	}
	return p.exitString(), rusageCPU(p.cmd.ProcessState), err
}

// exitString is the exit status; valid once exited is closed.
func (p *Process) exitString() string {
	if p.cmd.ProcessState == nil {
		return fmt.Sprint(p.waitErr)
	}
	return p.cmd.ProcessState.String()
}

func rusageCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// Sample is what /proc says about a process at one moment.
type Sample struct {
	RSSKiB, HWMKiB int64         // VmRSS, VmHWM (peak RSS)
	AnonKiB        int64         // RssAnon: the part of VmRSS that is not file-backed (heap, stacks)
	CPU            time.Duration // utime + stime
}

// RSSMiB is VmRSS in MiB.
func (s Sample) RSSMiB() float64 { return float64(s.RSSKiB) / 1024 }

// AnonMiB is RssAnon in MiB.
func (s Sample) AnonMiB() float64 { return float64(s.AnonKiB) / 1024 }

// HWMMiB is VmHWM, the peak RSS, in MiB.
func (s Sample) HWMMiB() float64 { return float64(s.HWMKiB) / 1024 }

// ReadProc reads VmRSS, VmHWM and RssAnon from /proc/<pid>/status and utime+stime from /proc/<pid>/stat
// (in clock ticks of 1/100 s).
func ReadProc(pid int) (Sample, error) {
	var s Sample
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return s, err
	}
	return parseProc(pid, status, nil)
}

// parseProc parses a status file and, when stat is nil, reads /proc/<pid>/stat.
func parseProc(pid int, status, stat []byte) (Sample, error) {
	var s Sample
	var err error
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "VmRSS":
			s.RSSKiB, err = parseKiB(v)
		case "VmHWM":
			s.HWMKiB, err = parseKiB(v)
		case "RssAnon":
			s.AnonKiB, err = parseKiB(v)
		}
		if err != nil {
			return s, fmt.Errorf("/proc/%d/status %s: %w", pid, k, err)
		}
	}
	if s.HWMKiB == 0 {
		return s, fmt.Errorf("/proc/%d/status: no VmHWM (process exited?)", pid)
	}
	if stat == nil {
		if stat, err = os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err != nil {
			return s, err
		}
	}
	if s.CPU, err = parseStatCPU(stat); err != nil {
		return s, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return s, nil
}

// parseStatCPU returns utime+stime of a /proc/<pid>/stat line. The command name (field 2) may
// contain spaces and parentheses: fields after the last ")" start at field 3 (state); utime and
// stime are fields 14 and 15.
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("unexpected format")
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("only %d fields", len(fields)+2)
	}
	utime, err1 := strconv.ParseInt(fields[14-3], 10, 64)
	stime, err2 := strconv.ParseInt(fields[15-3], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// parseKiB parses "   12345 kB".
func parseKiB(v string) (int64, error) {
	f := strings.Fields(v)
	if len(f) != 2 || f[1] != "kB" {
		return 0, fmt.Errorf("unexpected value %q", v)
	}
	return strconv.ParseInt(f[0], 10, 64)
}

// Percentile is the nearest-rank percentile of ds (p in (0, 100]); 0 for no data. p99 of 100
// samples is the second largest.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := max(1, min(int(math.Ceil(p/100*float64(len(s)))), len(s)))
	return s[rank-1]
}

// Version asks the binary for its version, for the log.
func Version(path string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "version").Output()
	if err != nil {
		return "version unknown: " + err.Error()
	}
	return strings.TrimSpace(string(out))
}

// Tail prints the last n lines of Kustos's output file path to w.
func Tail(w io.Writer, path string, n int) {
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(w, "    (cannot read Kustos output %s: %v)\n", path, err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	fmt.Fprintf(w, "    last %d lines of Kustos output %s:\n", len(lines), path)
	for _, l := range lines {
		fmt.Fprintln(w, "    |", l)
	}
}
