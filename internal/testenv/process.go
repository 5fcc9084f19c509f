package testenv

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// process is a child process running in its own process group.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // exit status; valid once done is closed
}

func startProcess(path string, args []string, stdout, stderr io.Writer) (*process, error) {
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop terminates the process group and waits for the process to exit, killing the group after
// timeout.
func (p *process) stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = terminateGroup(p.cmd.Process)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		_ = killGroup(p.cmd.Process)
		<-p.done
		return fmt.Errorf("testenv: %s did not stop within %v and was killed", filepath.Base(p.cmd.Path), timeout)
	}
}

// tailBuffer is an io.Writer keeping the last tailSize bytes written, to explain failures when
// process output is otherwise discarded.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 4 << 10

func newTailBuffer() *tailBuffer { return &tailBuffer{} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*tailSize {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

// report returns the kept output of the named process as an error, or nil if there is none.
func (t *tailBuffer) report(name string) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.buf
	if len(out) > tailSize {
		out = out[len(out)-tailSize:]
	}
	if len(out) == 0 {
		return nil
	}
	return fmt.Errorf("last output of %s (set KUSTOS_TESTENV_VERBOSE=1 for all of it):\n%s", name, out)
}
