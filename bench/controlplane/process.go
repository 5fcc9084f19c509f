package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on every Linux
// architecture Kubernetes runs on (sysconf(_SC_CLK_TCK)).
const clockTicks = 100

// kustosProcess is a running `kustos run`.
type kustosProcess struct {
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	exited  chan struct{} // closed when the process has exited
	waitErr error         // valid after exited is closed
}

// startKustos starts the binary as a separate process with Go's defaults for GOMAXPROCS, GOGC
// and GOMEMLIMIT, its output going to logPath.
func startKustos(path, kubeconfig, stateNamespace, logPath string) (*kustosProcess, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "run",
		"--kubeconfig="+kubeconfig,
		"--state-namespace="+stateNamespace,
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		"--log-level=error",
	)
	cmd.Env = cleanEnv(os.Environ())
	cmd.Stdout, cmd.Stderr = f, f
	// Do not outlive the benchmark if it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	p := &kustosProcess{cmd: cmd, logPath: logPath, logFile: f, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

// cleanEnv drops the variables that would change the Go runtime's defaults, and KUBECONFIG so
// that only --kubeconfig counts.
func cleanEnv(env []string) []string {
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

func (p *kustosProcess) pid() int { return p.cmd.Process.Pid }

// running reports an error if the process has exited.
func (p *kustosProcess) running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("kustos exited early: %v", exitString(p.cmd.ProcessState, p.waitErr))
	default:
		return nil
	}
}

// stop sends SIGTERM and waits up to grace for the exit, then kills. It returns the exit status
// and the CPU time of the whole life of the process, shutdown included.
func (p *kustosProcess) stop(grace time.Duration) (string, time.Duration, error) {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.exited
			return exitString(p.cmd.ProcessState, p.waitErr), rusageCPU(p.cmd.ProcessState),
				fmt.Errorf("kustos did not stop within %s of SIGTERM; killed", grace)
		}
	}
	ps := p.cmd.ProcessState
	var err error
	if !ps.Success() {
		err = fmt.Errorf("kustos exited with %s after SIGTERM", exitString(ps, p.waitErr))
	}
	return exitString(ps, p.waitErr), rusageCPU(ps), err
}

func exitString(ps *os.ProcessState, waitErr error) string {
	if ps == nil {
		return fmt.Sprint(waitErr)
	}
	return ps.String()
}

func rusageCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// procSample is what /proc says about a process at one moment.
type procSample struct {
	rssKiB, hwmKiB int64         // VmRSS, VmHWM
	cpu            time.Duration // utime + stime
}

func (s procSample) rssMiB() float64 { return float64(s.rssKiB) / 1024 }
func (s procSample) hwmMiB() float64 { return float64(s.hwmKiB) / 1024 }

func readProc(pid int) (procSample, error) {
	var s procSample
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "VmRSS":
			s.rssKiB, err = parseKiB(v)
		case "VmHWM":
			s.hwmKiB, err = parseKiB(v)
		}
		if err != nil {
			return s, fmt.Errorf("/proc/%d/status %s: %w", pid, k, err)
		}
	}
	if s.hwmKiB == 0 {
		return s, fmt.Errorf("/proc/%d/status: no VmHWM (process exited?)", pid)
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return s, err
	}
	// The command name (field 2) may contain spaces and parentheses: fields after the last ")"
	// start at field 3 (state); utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return s, fmt.Errorf("/proc/%d/stat: only %d fields", pid, len(fields)+2)
	}
	utime, err1 := strconv.ParseInt(fields[14-3], 10, 64)
	stime, err2 := strconv.ParseInt(fields[15-3], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return s, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	s.cpu = time.Duration(utime+stime) * time.Second / clockTicks
	return s, nil
}

// parseKiB parses "   12345 kB".
func parseKiB(v string) (int64, error) {
	f := strings.Fields(v)
	if len(f) != 2 || f[1] != "kB" {
		return 0, fmt.Errorf("unexpected value %q", v)
	}
	return strconv.ParseInt(f[0], 10, 64)
}

// kustosVersion asks the binary for its version, for the log.
func kustosVersion(path string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "version").Output()
	if err != nil {
		return "version unknown: " + err.Error()
	}
	return strings.TrimSpace(string(out))
}
