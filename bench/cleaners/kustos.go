package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
const clockTicks = 100

// kustosProcess is a running `kustos run`.
type kustosProcess struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	waitErr error         // valid after exited is closed
}

// startKustos starts `kustos run` in observer mode with the Cleaner detector, with Go's
// defaults for GOMAXPROCS, GOGC and GOMEMLIMIT, its output going to logPath.
func startKustos(path, kubeconfig, logPath, logLevel string) (*kustosProcess, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "run",
		"--kubeconfig="+kubeconfig,
		"--mode=observe",
		"--enable-cleaners=true",
		"--state-namespace="+stateNamespace,
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		"--log-level="+logLevel,
	)
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GOMAXPROCS", "GOGC", "GOMEMLIMIT", "KUBECONFIG":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the benchmark
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	p := &kustosProcess{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *kustosProcess) pid() int { return p.cmd.Process.Pid }

// sample reads /proc while the process runs.
func (p *kustosProcess) sample() (procSample, error) {
	select {
	case <-p.exited:
		return procSample{}, fmt.Errorf("kustos exited early: %s", p.cmd.ProcessState)
	default:
		return readProc(p.pid())
	}
}

// stop sends SIGTERM, waits up to grace (then kills), and returns the CPU time of the whole
// life of the process, shutdown included.
func (p *kustosProcess) stop(grace time.Duration) (time.Duration, error) {
	var err error
	select {
	case <-p.exited:
		err = fmt.Errorf("kustos exited early: %s", p.cmd.ProcessState)
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
			if p.waitErr != nil {
				err = fmt.Errorf("kustos exited with %w after SIGTERM", p.waitErr)
			}
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.exited
			err = fmt.Errorf("kustos did not stop within %s of SIGTERM; killed", grace)
		}
	}
	ps := p.cmd.ProcessState
	return ps.UserTime() + ps.SystemTime(), err
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
		k, v, _ := strings.Cut(line, ":")
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &s.rssKiB
		case "VmHWM":
			dst = &s.hwmKiB
		default:
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return s, fmt.Errorf("/proc/%d/status %s: unexpected value %q", pid, k, v)
		}
		if *dst, err = strconv.ParseInt(f[0], 10, 64); err != nil {
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
	// Fields after the command name (which may hold spaces) start at field 3; utime and stime
	// are fields 14 and 15.
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
