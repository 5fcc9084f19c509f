package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/submit/submittest"
)

// execMain makes the test binary kustos itself when a test runs it as a process (runKustos).
const execMain = "KUSTOS_TEST_EXEC_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(execMain) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// kustosRun is one `kustos` process: its exit code, output and peak resident memory.
type kustosRun struct {
	code           int
	stdout, stderr string
	maxRSS         int64 // bytes
	elapsed        time.Duration
}

// runKustos runs this test binary as `kustos args...`, a process of its own.
func runKustos(t *testing.T, args ...string) kustosRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), execMain+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := kustosRun{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errorsAs(err, &exit):
		r.code = exit.ExitCode()
	default:
		t.Fatal(err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss << 10 // KiB on Linux
	}
	return r
}

func errorsAs(err error, exit **exec.ExitError) bool {
	return errors.As(err, exit)
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

type submitResult struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	URL    string `json:"url"`
}

// examTree is an exam volume: files in nested directories, an empty directory, a link to a
// file outside the volume and a link to /.
func examTree(t *testing.T) (dir string, files map[string]string) {
	dir = t.TempDir()
	files = map[string]string{
		"answers.txt":        "42\n",
		"src/main.c":         "int main(void) { return 0; }\n",
		"src/lib/big.bin":    strings.Repeat("0123456789abcdef", 1<<18), // 4 MiB
		"empty/":             "",
		"notes/2024/day1.md": "# day 1\n",
	}
	submittest.WriteTree(t, dir, files)
	secret := filepath.Join(t.TempDir(), "other-tenant.txt")
	if err := os.WriteFile(secret, []byte("not yours"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "src", "steal")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(dir, "root")); err != nil {
		t.Fatal(err)
	}
	return dir, files
}

// TestSubmitProcess runs `kustos submit` as a process against the reference server: what it
// stores unzips to the volume's files (links skipped, not followed), a cut upload resumes, a
// 5xx is retried, a checksum mismatch fails with nothing accepted, and the token is never
// printed.
func TestSubmitProcess(t *testing.T) {
	const token = "tok-3f9a1c"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrongToken := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrongToken, []byte("not-it"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		fault func(s *submittest.Server)
		args  []string
		// wantCode 0: the submission is accepted and checked against the tree.
		wantCode   int
		wantStderr string
		// requests: the server sees requests (false: refused before any).
		noRequests bool
	}{
		{name: "accepted, unzips to the volume"},
		{name: "cut mid-way and resumed", fault: func(s *submittest.Server) { s.CutOnceAt(3<<20 + 123) },
			wantStderr: "attempt 1 of 5 failed: PATCH"},
		{name: "5xx then success", fault: func(s *submittest.Server) { s.FailNext(http.MethodPatch, 1, http.StatusServiceUnavailable, "") },
			wantStderr: "attempt 1 of 5 failed: PATCH: HTTP 503"},
		{name: "checksum mismatch: exit 1, nothing accepted", fault: func(s *submittest.Server) { s.CorruptAt(1 << 20) },
			wantCode: 1, wantStderr: "kustos submit: checksum mismatch: the server refused"},
		{name: "the server refuses the token: exit 1", args: []string{"--token-file", wrongToken},
			wantCode: 1, wantStderr: "kustos submit: POST: HTTP 401 Unauthorized: a bearer token is required"},
		{name: "an empty token file: exit 2", args: []string{"--token-file", os.DevNull},
			wantCode: 2, wantStderr: "--token-file=/dev/null: empty", noRequests: true},
		{name: "http without --allow-http: exit 2", args: []string{"--allow-http=false"},
			wantCode: 2, wantStderr: "http sends the archive and the token unencrypted", noRequests: true},
		{name: "a name that is no file name: exit 2", args: []string{"--name", "../../etc/passwd"},
			wantCode: 2, wantStderr: `invalid --name: name "../../etc/passwd": starts with a dot`, noRequests: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := t.TempDir()
			s, err := submittest.Start(submittest.Options{Dir: store, Token: token})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if tc.fault != nil {
				tc.fault(s)
			}
			dir, files := examTree(t)
			args := append([]string{"submit", "--from", dir, "--to", s.URL() + "?sig=query-secret", "--token-file", tokenFile,
				"--name", "exam-42", "--allow-http"}, tc.args...)
			r := runKustos(t, args...)
			if strings.Contains(r.stdout+r.stderr, token) || strings.Contains(r.stdout+r.stderr, "query-secret") {
				t.Errorf("the output shows the token or the query:\n%s\n%s", r.stdout, r.stderr)
			}
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.wantCode, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.wantStderr) {
				t.Errorf("stderr %q does not say %q", r.stderr, tc.wantStderr)
			}
			if tc.noRequests && s.Requests(http.MethodPost)+s.Requests(http.MethodPatch) != 0 {
				t.Error("the server got requests")
			}
			if tc.wantCode != 0 {
				// A failure is one line (after the retries' lines); a usage error adds the pointer to --help.
				lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
				if tc.wantCode == 1 && !strings.HasPrefix(lines[len(lines)-1], tc.wantStderr) {
					t.Errorf("the last stderr line is %q, want it to say %q", lines[len(lines)-1], tc.wantStderr)
				}
				if a := s.Accepted(); len(a) != 0 {
					t.Errorf("the server accepted %+v", a)
				}
				if left, _ := filepath.Glob(filepath.Join(store, "*")); len(left) != 0 {
					t.Errorf("the server kept %q", left)
				}
				return
			}
			var res submitResult
			if err := json.Unmarshal([]byte(lastLine(r.stdout)), &res); err != nil {
				t.Fatalf("the last stdout line is not the result: %v\n%s", err, r.stdout)
			}
			a := s.Accepted()
			if len(a) != 1 || a[0].SHA256 != res.SHA256 || a[0].Bytes != res.Bytes || res.Name != "exam-42" || res.URL != s.URL() {
				t.Fatalf("printed %+v, the server accepted %+v", res, a)
			}
			for _, link := range []string{`{"skipped":"root","reason":"a symbolic link, not followed"}`, `{"skipped":"src/steal","reason":"a symbolic link, not followed"}`} {
				if !strings.Contains(r.stdout, link) {
					t.Errorf("stdout does not report %s:\n%s", link, r.stdout)
				}
			}
			checkZip(t, a[0].Path, files)
		})
	}
}

// checkZip: the ZIP at path holds exactly files (a name ending in "/" a directory), each with
// its contents.
func checkZip(t *testing.T, path string, files map[string]string) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	got := map[string]bool{}
	for _, f := range zr.File {
		got[f.Name] = true
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		want, ok := files[f.Name]
		if !ok {
			t.Errorf("the archive holds %s", f.Name)
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(b) != want {
			t.Errorf("%s: %d bytes, %v; want %d bytes", f.Name, len(b), err, len(want))
		}
	}
	for name := range files {
		if !got[name] {
			t.Errorf("%s is not in the archive", name)
		}
	}
}

// sparseSize is the size of the disk image TestSubmitSparse archives: 3 GiB, sparse, so that
// it costs no disk space, only the time to read, hash and send its zeros (measured: see
// docs/submission.md).
const sparseSize = 3 << 30

// TestSubmitSparse: a 3 GiB VM disk (sparse) is archived and uploaded by the process, cut once
// half-way and resumed, its peak resident memory less than 32 MiB above what `kustos version`
// needs (the binary's own start costs some 90 MiB): the archive is streamed, never held. The server counts and hashes what it receives and discards it.
func TestSubmitSparse(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: reads and sends 3 GiB")
	}
	s, err := submittest.Start(submittest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.CutOnceAt(sparseSize / 2)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(`{"vm":"exam-42"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	disk := filepath.Join(dir, "disk.img")
	if f, err := os.Create(disk); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	if err := os.Truncate(disk, sparseSize); err != nil {
		t.Fatal(err)
	}
	r := runKustos(t, "submit", "--from", dir, "--to", s.URL(), "--name", "vm-disk", "--allow-http")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	var res submitResult
	if err := json.Unmarshal([]byte(lastLine(r.stdout)), &res); err != nil {
		t.Fatalf("the last stdout line is not the result: %v\n%s", err, r.stdout)
	}
	a := s.Accepted()
	if len(a) != 1 || a[0].Bytes != res.Bytes || a[0].SHA256 != res.SHA256 {
		t.Fatalf("printed %+v, the server accepted %+v", res, a)
	}
	if res.Bytes < sparseSize || res.Bytes > sparseSize+4096 {
		t.Errorf("%d bytes sent, want the disk's %d and a few headers", res.Bytes, sparseSize)
	}
	if !strings.Contains(r.stderr, "attempt 1 of 5 failed") {
		t.Errorf("no cut was met:\n%s", r.stderr)
	}
	t.Logf("%d bytes in %s (%.0f MiB/s), peak RSS %d MiB", res.Bytes, r.elapsed.Round(time.Millisecond),
		float64(res.Bytes)/(1<<20)/r.elapsed.Seconds(), r.maxRSS>>20)
	base := runKustos(t, "version").maxRSS
	t.Logf("kustos version: peak RSS %d MiB", base>>20)
	if r.maxRSS == 0 || base == 0 || r.maxRSS-base > 32<<20 {
		t.Errorf("peak resident memory %d MiB, %d MiB above kustos version's; want less than 32 MiB above", r.maxRSS>>20, (r.maxRSS-base)>>20)
	}
}
