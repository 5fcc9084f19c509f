package submit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kustos-dev/kustos/internal/cli"
)

const longText = `Archives the directory --from (regular files and directories, recursively; symbolic links are
never followed, device files never opened: both are skipped) as a ZIP and uploads it to --to,
streaming: nothing is copied to a temporary file, and memory stays bounded whatever the size.
The upload protocol (docs/submission.md) sends the archive's size and SHA-256 with the request
that completes it; the server accepts the submission only when both match what it received.

Cut connections, timeouts, 5xx, 408 and 429 answers are retried with exponential backoff and
jitter (a longer Retry-After is waited for), resuming where the server's offset says, up to
--max-attempts attempts in a row that bring the upload no further; other answers end it.

stdout: one JSON line per entry left out, {"skipped":PATH,"reason":…}, then on success
{"name":…,"bytes":…,"sha256":…,"url":…} (url without credentials or query). stderr: a line per
retry, and on failure one line saying why. The token is never printed.

Exit status: 0 once the server confirmed the submission; 1 when it did not; 2 for bad flags.`

// Command holds the flags of `kustos submit`.
type Command struct {
	from, to, tokenFile, name string
	maxAttempts               int
	timeout                   time.Duration
	allowHTTP                 bool
}

// NewCommand is `kustos submit`.
func NewCommand(stdout, stderr io.Writer) *cobra.Command {
	s := &Command{maxAttempts: DefaultMaxAttempts, timeout: 6 * time.Hour}
	cmd := &cobra.Command{
		Use:   "submit --from DIR --to URL [--token-file FILE] [--name NAME] [--max-attempts N] [--timeout D]",
		Short: "archive a directory as a ZIP and upload it, confirmed by its size and SHA-256",
		Long:  longText,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return s.run(stdout, stderr)
		},
	}
	fs := cmd.Flags()
	cli.InGroup(fs, cli.GroupInput, func() {
		fs.StringVar(&s.from, "from", "", "the directory to archive (required)")
	})
	cli.InGroup(fs, cli.GroupGeneral, func() {
		fs.StringVar(&s.to, "to", "", "the submission endpoint: an https URL (required)")
		fs.StringVar(&s.tokenFile, "token-file", "", "a file holding the token sent as Authorization: Bearer (surrounding white space is ignored)")
		fs.StringVar(&s.name, "name", "", "the submission's name, 1-128 of A-Z a-z 0-9 . _ - (default: --from's last element)")
		fs.IntVar(&s.maxAttempts, "max-attempts", DefaultMaxAttempts, "attempts in a row that bring the upload no further before it fails (1: no retry)")
		cli.Duration(fs, &s.timeout, "timeout", true, "limit of the whole submission (never: none)")
		fs.BoolVar(&s.allowHTTP, "allow-http", false, "accept --to with the http scheme: the archive and the token travel unencrypted (tests, a server on loopback)")
	})
	return cmd
}

func (s *Command) run(stdout, stderr io.Writer) error {
	to, err := s.destination()
	if err != nil {
		return err
	}
	if s.from == "" {
		return cli.Usagef("need --from DIR")
	}
	if s.maxAttempts < 1 {
		return cli.Usagef("invalid --max-attempts=%d: want 1 or more", s.maxAttempts)
	}
	name := s.name
	if name == "" {
		abs, err := filepath.Abs(s.from)
		if err != nil {
			return cli.Usagef("--from=%s: %v", s.from, err)
		}
		name = filepath.Base(abs)
		if err := CheckName(name); err != nil {
			return cli.Usagef("--from=%s gives no usable name (%v): set --name", s.from, err)
		}
	} else if err := CheckName(name); err != nil {
		return cli.Usagef("invalid --name: %v", err)
	}
	token, err := readToken(s.tokenFile)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(s.from)
	if err != nil {
		return cli.Usagef("--from: %v", err)
	}
	defer root.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.timeout, fmt.Errorf("--timeout=%s passed", s.timeout))
		defer cancel()
	}

	enc := json.NewEncoder(stdout)
	reported := map[string]bool{} // an entry skipped is reported once, not at every resume
	src := func(w io.Writer) error {
		return Archive(root, w, func(sk Skip) {
			if !reported[sk.Path] {
				reported[sk.Path] = true
				_ = enc.Encode(sk)
			}
		})
	}
	c := &Client{Token: token, Name: name, MaxAttempts: s.maxAttempts,
		Notify: func(msg string) { fmt.Fprintln(stderr, "kustos submit:", msg) }}
	res, err := c.Upload(ctx, to, src)
	if err != nil {
		return err
	}
	return enc.Encode(res)
}

// destination parses --to: https, or http with --allow-http; a host; no fragment. Errors never
// show the URL's user information or query.
func (s *Command) destination() (*url.URL, error) {
	if s.to == "" {
		return nil, cli.Usagef("need --to URL")
	}
	to, err := url.Parse(s.to)
	if err != nil {
		return nil, cli.Usagef("invalid --to: not a URL")
	}
	switch {
	case to.Scheme == "https":
	case to.Scheme == "http" && s.allowHTTP:
	case to.Scheme == "http":
		return nil, cli.Usagef("invalid --to=%s: http sends the archive and the token unencrypted; use https (or --allow-http)", Redact(to))
	default:
		return nil, cli.Usagef("invalid --to=%s: want an https URL", Redact(to))
	}
	if to.Host == "" || to.Hostname() == "" {
		return nil, cli.Usagef("invalid --to=%s: no host", Redact(to))
	}
	if to.Fragment != "" {
		return nil, cli.Usagef("invalid --to=%s: a fragment (#) is not sent to a server", Redact(to))
	}
	return to, nil
}

// readToken reads --token-file; the token itself appears in no message.
func readToken(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", cli.Usagef("--token-file=%s: %v", file, err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", cli.Usagef("--token-file=%s: empty", file)
	}
	for _, r := range token {
		if r < 0x21 || r == 0x7f {
			return "", cli.Usagef("--token-file=%s: the token holds white space or a control character", file)
		}
	}
	return token, nil
}
