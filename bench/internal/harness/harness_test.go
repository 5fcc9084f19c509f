package harness

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFlagExit(t *testing.T) {
	for _, tc := range []struct {
		err    error
		code   int
		ok     bool
		stderr string
	}{
		{nil, 0, true, ""},
		{flag.ErrHelp, 0, false, ""},
		{fmt.Errorf("wrapped: %w", flag.ErrHelp), 0, false, ""},
		{errors.New("-n must be at least 1"), 2, false, "bench: -n must be at least 1\n"},
	} {
		var b bytes.Buffer
		code, ok := FlagExit("bench", tc.err, &b)
		if code != tc.code || ok != tc.ok || b.String() != tc.stderr {
			t.Errorf("FlagExit(%v) = %d, %v, %q; want %d, %v, %q", tc.err, code, ok, b.String(), tc.code, tc.ok, tc.stderr)
		}
	}
}

func TestFlagsCheck(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "kustos")
	plain := filepath.Join(dir, "plain")
	for p, mode := range map[string]os.FileMode{exe: 0o755, plain: 0o644} {
		if err := os.WriteFile(p, nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		args    []string
		kustos  string
		wantErr string
	}{
		{"executable", nil, exe, ""},
		{"relative", nil, "./kustos", ""},
		{"missing", nil, "", "-kustos is required"},
		{"not executable", nil, plain, "not an executable file"},
		{"a directory", nil, dir, "not an executable file"},
		{"positional", []string{"extra", "args"}, exe, "unexpected arguments: extra args"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(dir)
			fs := flag.NewFlagSet("bench", flag.ContinueOnError)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			f := Flags{Kustos: tc.kustos}
			err := f.Check(fs)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one with %q", err, tc.wantErr)
			case tc.wantErr == "" && f.Kustos != exe:
				t.Errorf("kustos = %q, want %q", f.Kustos, exe)
			}
		})
	}
}

func TestFlagsRegister(t *testing.T) {
	var f Flags
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	f.Register(fs, BinHelp, KeepLogsHelp)
	if f.Workers != 32 || !f.Strict {
		t.Errorf("defaults: %+v", f)
	}
	if err := fs.Parse([]string{"-kustos", "k", "-bin", "b", "-out", "o", "-workers", "3", "-strict=false", "-keep-logs"}); err != nil {
		t.Fatal(err)
	}
	if want := (Flags{Kustos: "k", BinDir: "b", Out: "o", Workers: 3, KeepLogs: true}); f != want {
		t.Errorf("parsed %+v, want %+v", f, want)
	}
}

func TestFinish(t *testing.T) {
	for _, tc := range []struct {
		o    Outcome
		code int
		kept bool
	}{
		{Outcome{}, 0, false},
		{Outcome{KeepLogs: true}, 0, true},
		{Outcome{Failed: true}, 1, true},
		{Outcome{Missed: true}, 0, true},
		{Outcome{Missed: true, Strict: true}, 1, true},
		{Outcome{Failed: true, Strict: true}, 1, true},
	} {
		dir, _, err := TempLog("test")
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		code := Finish(NewLogf(&log), dir, tc.o)
		_, statErr := os.Stat(dir)
		kept := statErr == nil
		_ = os.RemoveAll(dir)
		if code != tc.code || kept != tc.kept {
			t.Errorf("%+v: code %d, kept %v; want %d, %v\n%s", tc.o, code, kept, tc.code, tc.kept, log.String())
		}
		if kept != strings.Contains(log.String(), "Kustos output kept in "+dir) {
			t.Errorf("%+v: log does not match: %q", tc.o, log.String())
		}
	}
}

func TestEmit(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.md")
	var stdout bytes.Buffer
	if err := Emit(&stdout, NewLogf(io.Discard), "| a |\n", out); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "| a |\n" || stdout.String() != "| a |\n" {
		t.Errorf("file %q (%v), stdout %q", b, err, stdout.String())
	}
	var log bytes.Buffer
	if err := Emit(io.Discard, NewLogf(&log), "x", filepath.Join(out, "no", "such")); err == nil || !strings.Contains(log.String(), "writing ") {
		t.Errorf("a failed write: %v, log %q", err, log.String())
	}
}
