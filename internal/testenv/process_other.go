//go:build !unix

package testenv

import (
	"os"
	"os/exec"
)

func setProcessGroup(*exec.Cmd) {}

func terminateGroup(p *os.Process) error { return p.Kill() }

func killGroup(p *os.Process) error { return p.Kill() }
