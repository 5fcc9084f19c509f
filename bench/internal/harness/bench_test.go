package harness

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

type testOptions struct {
	Flags
	n int
}

func parseTest(args []string, stderr io.Writer) (testOptions, error) {
	fs := NewFlagSet("testbench", stderr)
	var o testOptions
	o.Register(fs, BinHelp, KeepLogsHelp)
	fs.IntVar(&o.n, "n", 1, "how many")
	if err := o.Parse(fs, args); err != nil {
		return o, err
	}
	if o.n < 1 {
		return o, errors.New("-n must be at least 1")
	}
	return o, nil
}

// fakeKustos is an executable that answers "kustos version" with v9.9.9.
func fakeKustos(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kustos")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho v9.9.9\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunFlags(t *testing.T) {
	k := fakeKustos(t)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string // a regexp
	}{
		{"help", []string{"-h"}, 0, `^Usage of testbench:\n(.|\n)*-kustos string`},
		{"unknown flag", []string{"-nope"}, 2, `flag provided but not defined: -nope\nUsage of testbench:(.|\n)*testbench: flag provided but not defined: -nope\n$`},
		{"no -kustos", nil, 2, `^testbench: -kustos is required \(make build puts it in bin/kustos\)\n$`},
		{"positional", []string{"-kustos", k, "extra"}, 2, `^testbench: unexpected arguments: extra\n$`},
		{"the bench's own check", []string{"-kustos", k, "-n", "0"}, 2, `^testbench: -n must be at least 1\n$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := false
			b := Bench[testOptions]{Name: "testbench", Parse: parseTest, Run: func(*Session, testOptions) Result {
				ran = true
				return Result{}
			}}
			var stdout, stderr bytes.Buffer
			if code := Run(b, tc.args, &stdout, &stderr); code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			if ran || stdout.Len() > 0 {
				t.Errorf("ran %v, stdout %q: want no run and no report", ran, stdout.String())
			}
			if !regexp.MustCompile(tc.stderr).MatchString(stderr.String()) {
				t.Errorf("stderr %q, want it to match %q", stderr.String(), tc.stderr)
			}
		})
	}
}

func TestRunOutcome(t *testing.T) {
	k := fakeKustos(t)
	for _, tc := range []struct {
		name      string
		bench     Bench[testOptions]
		args      []string
		result    Result
		badOut    bool // -out names a file in a directory that does not exist
		code      int
		kept      bool
		logs      []string // in this order, after the first line
		firstLine string   // a regexp
	}{
		{name: "passed", code: 0, firstLine: `kustos .*/kustos \(v9\.9\.9\); \d+ CPUs; Kustos output in .*/kustos-bench-testbench-\d+/kustos\.log$`},
		{name: "passed, -keep-logs", args: []string{"-keep-logs"}, code: 0, kept: true, logs: []string{"Kustos output kept in "}},
		{name: "no version", bench: Bench[testOptions]{NoVersion: true}, code: 0, firstLine: `kustos .*/kustos; \d+ CPUs; Kustos output in .*/kustos\.log$`},
		{name: "many logs", bench: Bench[testOptions]{ManyLogs: true}, code: 0, firstLine: `Kustos output in .*/kustos-bench-testbench-\d+$`},
		{name: "run error", result: Result{Err: errors.New("no control plane")}, code: 1, kept: true,
			logs: []string{"FAILED: no control plane", "    (cannot read Kustos output ", "Kustos output kept in "}},
		{name: "failed measurement", result: Result{Failed: true, Failures: []string{"row: broken"}}, code: 1, kept: true,
			logs: []string{"FAILED: row: broken", "Kustos output kept in "}},
		{name: "missed, -strict", result: Result{Missed: true}, code: 1, kept: true, logs: []string{"Kustos output kept in ", "a target was missed (-strict)"}},
		{name: "missed, -strict=false", args: []string{"-strict=false"}, result: Result{Missed: true}, code: 0, kept: true, logs: []string{"Kustos output kept in "}},
		{name: "-out not written", badOut: true, code: 1, kept: true, logs: []string{"writing ", "Kustos output kept in "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			out := filepath.Join(t.TempDir(), "report.md")
			if tc.badOut {
				out = filepath.Join(t.TempDir(), "missing", "report.md")
			}
			var session *Session
			b := tc.bench
			b.Name, b.Parse = "testbench", parseTest
			b.Run = func(s *Session, o testOptions) Result {
				session = s
				r := tc.result
				r.Report = "the report\n"
				return r
			}
			var stdout, stderr bytes.Buffer
			code := Run(b, append([]string{"-kustos", k, "-out", out}, tc.args...), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			if stdout.String() != "the report\n" {
				t.Errorf("stdout %q, want the report", stdout.String())
			}
			if data, _ := os.ReadFile(out); !tc.badOut && string(data) != "the report\n" {
				t.Errorf("-out holds %q, want the report", data)
			}
			if session == nil {
				t.Fatal("the bench did not run")
			}
			if session.LogPath != filepath.Join(session.LogDir, "kustos.log") {
				t.Errorf("LogPath %s is not kustos.log in LogDir %s", session.LogPath, session.LogDir)
			}
			if _, err := os.Stat(session.LogDir); (err == nil) != tc.kept {
				t.Errorf("log directory kept: %v, want %v", err == nil, tc.kept)
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if tc.firstLine != "" && !regexp.MustCompile(tc.firstLine).MatchString(lines[0]) {
				t.Errorf("first line %q, want it to match %q", lines[0], tc.firstLine)
			}
			// Every line after the first is one of tc.logs, in their order.
			rest := lines[1:]
			if len(rest) != len(tc.logs) {
				t.Fatalf("log after the first line:\n%s\nwant %d lines", strings.Join(rest, "\n"), len(tc.logs))
			}
			for i, want := range tc.logs {
				if !strings.Contains(rest[i], want) {
					t.Errorf("log line %d: %q, want it to contain %q", i+2, rest[i], want)
				}
			}
		})
	}
}

// SIGINT or SIGTERM cancels the run's context rather than killing the bench, so that the run
// can still stop Kustos and the control plane and report what it measured.
func TestRunSignal(t *testing.T) {
	k := fakeKustos(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			b := Bench[testOptions]{Name: "testbench", Parse: parseTest, Run: func(s *Session, _ testOptions) Result {
				if err := s.Ctx.Err(); err != nil {
					return Result{Err: err}
				}
				if err := syscall.Kill(os.Getpid(), sig); err != nil {
					return Result{Err: err}
				}
				select {
				case <-s.Ctx.Done():
					return Result{Report: "interrupted\n", Failed: true}
				case <-time.After(10 * time.Second):
					return Result{Err: errors.New("the context was not cancelled")}
				}
			}}
			var stdout, stderr bytes.Buffer
			if code := Run(b, []string{"-kustos", k}, &stdout, &stderr); code != 1 || stdout.String() != "interrupted\n" {
				t.Errorf("exit code %d, stdout %q; want 1 and the report\n%s", code, stdout.String(), stderr.String())
			}
		})
	}
}
