package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
)

// usage runs bin with args under ptrace, stops it as it exits (PTRACE_EVENT_EXIT: its memory is
// still mapped) and reads its /proc status there: the peak, and what of the resident set is
// anonymous and what is the binary's pages.
func usage(ctx context.Context, bin string, args []string) (Usage, error) {
	// The tracer is the thread that started the child; every ptrace call and wait must come
	// from it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return Usage{}, err
	}
	pid := cmd.Process.Pid
	// The child stops at exec. WALL: os/exec starts it with clone3, which a plain wait4 does
	// not see.
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, syscall.WALL, nil); err != nil || !ws.Stopped() {
		_ = cmd.Process.Kill()
		return Usage{}, fmt.Errorf("%s: not stopped at exec (status %v): %w", bin, ws, err)
	}
	if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACEEXIT); err != nil {
		_ = cmd.Process.Kill()
		return Usage{}, fmt.Errorf("ptrace %s: %w", bin, err)
	}
	var (
		u   Usage
		got = fmt.Errorf("%s %s ended before its exit could be observed", bin, strings.Join(args, " "))
		sig int
	)
	for {
		if err := syscall.PtraceCont(pid, sig); err != nil {
			return Usage{}, fmt.Errorf("ptrace %s: %w", bin, err)
		}
		sig = 0
		if _, err := syscall.Wait4(pid, &ws, syscall.WALL, nil); err != nil {
			return Usage{}, err
		}
		switch {
		case ws.Exited() || ws.Signaled():
			if ws.Signaled() || ws.ExitStatus() != 0 {
				return Usage{}, fmt.Errorf("%s %s: %v", bin, strings.Join(args, " "), ws)
			}
			return u, got
		case ws.Stopped() && ws.TrapCause() == syscall.PTRACE_EVENT_EXIT:
			var status []byte
			if status, got = os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); got == nil {
				u, got = ParseStatus(bytes.NewReader(status))
			}
		case ws.Stopped() && ws.StopSignal() != syscall.SIGTRAP:
			sig = int(ws.StopSignal()) // the child's own signal (the Go runtime preempts with SIGURG)
		}
	}
}
