package notify

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"os"
	"slices"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TLSMode is how a Mail protects its connection to the SMTP server.
type TLSMode string

const (
	// TLSStartTLS (the default): a plain connection (port 587) upgraded with STARTTLS, which is
	// mandatory: a server that does not offer it is an error, never a fallback to plain text.
	TLSStartTLS TLSMode = "starttls"
	// TLSImplicit: TLS from the first byte (SMTPS, port 465).
	TLSImplicit TLSMode = "tls"
	// TLSNone: no encryption (port 25), for a relay on the same host or in tests. With a
	// username it is allowed only towards a loopback host, since the password would cross the
	// network in the clear.
	TLSNone TLSMode = "none"
)

// Defaults of MailConfig.
const (
	DefaultMailTimeout = 30 * time.Second
	// MessageIDDomain is the right-hand side of every Message-ID a Mail writes.
	MessageIDDomain = "kustos"
)

// MailConfig configures NewMail.
type MailConfig struct {
	// Host is the SMTP server's name or address (and the name its certificate must carry).
	Host string
	// Port defaults to 587 for starttls, 465 for tls, 25 for none.
	Port int
	// TLS defaults to TLSStartTLS.
	TLS TLSMode
	// Username, when set, makes the Mail authenticate (PLAIN, LOGIN, CRAM-MD5 or SCRAM, the
	// strongest the server offers over TLS; PLAIN with TLSNone).
	Username string
	// Password goes with Username. Never logged: String, GoString, LogValue and JSON leave it out.
	Password string `json:"-"`
	// PasswordFile, instead of Password, names a file holding it (a mounted Secret; surrounding
	// white space is dropped). It is read at each connection, so a rotated Secret takes effect
	// without a restart.
	PasswordFile string
	// From is the sender, an RFC 5322 address: "Kustos <kustos@example.com>".
	From string
	// CAFile, when set, names PEM certificates trusted besides the system's, for a server with a
	// certificate of a private CA.
	CAFile string
	// Templates, when set, is a directory whose template files replace the built-in ones of the
	// same name (see builtinTemplates).
	Templates string
	// Timeout bounds connecting to the server; default DefaultMailTimeout.
	Timeout time.Duration
}

// String describes the configuration without the password.
func (c MailConfig) String() string {
	pw := ""
	switch {
	case c.Password != "":
		pw = " password=(set)"
	case c.PasswordFile != "":
		pw = " password-file=" + c.PasswordFile
	}
	user := ""
	if c.Username != "" {
		user = " username=" + c.Username
	}
	return fmt.Sprintf("smtp %s:%d tls=%s from=%q%s%s", c.Host, c.port(), c.mode(), c.From, user, pw)
}

// GoString is String, so that %#v does not print the password either.
func (c MailConfig) GoString() string { return c.String() }

// LogValue is String, for log/slog.
func (c MailConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

func (c MailConfig) mode() TLSMode {
	if c.TLS == "" {
		return TLSStartTLS
	}
	return c.TLS
}

func (c MailConfig) port() int {
	switch {
	case c.Port != 0:
		return c.Port
	case c.mode() == TLSImplicit:
		return gomail.DefaultPortSSL
	case c.mode() == TLSNone:
		return gomail.DefaultPort
	default:
		return gomail.DefaultPortTLS
	}
}

// Mail sends Notices by email through an SMTP server: one message per Notice, or per batch (see
// Batcher), with a text and an HTML part rendered from templates. Its Message-ID is derived from
// the Notice IDs, so a message sent again after a crash is recognisable as the same one. Neither
// the password nor a Notice's links are ever part of an error.
type Mail struct {
	cfg  MailConfig
	from *netmail.Address
	tls  *tls.Config
	tmpl *mailTemplates
	now  func() time.Time
}

// ErrMailConfig: NewMail was given a configuration it cannot use.
var ErrMailConfig = errors.New("invalid mail configuration")

// NewMail checks cfg, loads the CA file and the templates (a broken template is an error here,
// not at the first send) and returns a Mail. It does not connect to the server.
func NewMail(cfg MailConfig) (*Mail, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrMailConfig}, args...)...)
	}
	if cfg.Host == "" {
		return nil, bad("no SMTP host")
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, bad("port %d is not a TCP port", cfg.Port)
	}
	switch cfg.mode() {
	case TLSStartTLS, TLSImplicit, TLSNone:
	default:
		return nil, bad("TLS mode %q is none of starttls, tls, none", cfg.TLS)
	}
	if cfg.Password != "" && cfg.PasswordFile != "" {
		return nil, bad("both a password and a password file")
	}
	if (cfg.Password != "" || cfg.PasswordFile != "") && cfg.Username == "" {
		return nil, bad("a password without a username")
	}
	if cfg.Username != "" && cfg.mode() == TLSNone && !isLoopback(cfg.Host) {
		return nil, bad("TLS mode none with a username would send the password in the clear to %s: use starttls or tls (none authenticates only to a loopback host)", cfg.Host)
	}
	if cfg.From == "" {
		return nil, bad("no sender (From) address")
	}
	from, err := netmail.ParseAddress(cfg.From)
	if err != nil {
		return nil, bad("the sender %q is not an email address: %v", cfg.From, err)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultMailTimeout
	}
	tc := &tls.Config{ServerName: cfg.Host, MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, bad("CA file: %v", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, bad("CA file %s holds no PEM certificate", cfg.CAFile)
		}
		tc.RootCAs = pool
	}
	tmpl, err := loadTemplates(cfg.Templates)
	if err != nil {
		return nil, err
	}
	initDeliveries(notifierMail)
	return &Mail{cfg: cfg, from: from, tls: tc, tmpl: tmpl, now: time.Now}, nil
}

// String describes the Mail without its password.
func (m *Mail) String() string { return "mail via " + m.cfg.String() }

// Send mails n to n.To as a message of its own. A Notice without To is skipped (nil): it is for
// a webhook only.
func (m *Mail) Send(ctx context.Context, n lifecycle.Notice) error {
	return m.SendBatch(ctx, []lifecycle.Notice{n})
}

// SendBatch mails ns to their recipient as one message listing them all, soonest action first;
// its Message-ID is the same for the same set of Notice IDs. Notices without To are skipped; the
// others must have the same recipient.
func (m *Mail) SendBatch(ctx context.Context, ns []lifecycle.Notice) error {
	ns = withRecipient(ns)
	if len(ns) == 0 {
		return nil
	}
	to := strings.TrimSpace(ns[0].To)
	for _, n := range ns[1:] {
		if !sameRecipient(n.To, to) {
			return fmt.Errorf("mail: one message for two recipients, %s and %s", to, strings.TrimSpace(n.To))
		}
	}
	ns = sortNotices(ns)
	err := m.send(ctx, to, ns)
	countDelivery(notifierMail, err)
	if err == nil {
		return nil
	}
	return redactErr(fmt.Errorf("mail to %s via %s:%d: %w", to, m.cfg.Host, m.cfg.port(), err), m.secrets(ns))
}

func (m *Mail) send(ctx context.Context, to string, ns []lifecycle.Notice) error {
	subject, text, html, err := m.tmpl.render(ns, m.now())
	if err != nil {
		return err
	}
	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	msg.FromMailAddress(m.from)
	if err := msg.To(to); err != nil {
		return fmt.Errorf("the recipient is not an email address: %w", err)
	}
	msg.Subject(subject)
	msg.SetMessageIDWithValue(MessageID(ids(ns)...))
	msg.SetDateWithValue(m.now())
	msg.SetUserAgent("Kustos")
	// RFC 3834: no vacation replies to a robot.
	msg.SetGenHeader("Auto-Submitted", "auto-generated")
	msg.SetGenHeader(gomail.HeaderXAutoResponseSuppress, "All")
	msg.SetBodyString(gomail.TypeTextPlain, text)
	msg.AddAlternativeString(gomail.TypeTextHTML, html)

	opts := []gomail.Option{gomail.WithPort(m.cfg.port()), gomail.WithTimeout(m.cfg.Timeout), gomail.WithTLSConfig(m.tls)}
	switch m.cfg.mode() {
	case TLSImplicit:
		opts = append(opts, gomail.WithSSL())
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	}
	if m.cfg.Username != "" {
		pw, err := m.password()
		if err != nil {
			return err
		}
		auth := gomail.SMTPAuthAutoDiscover
		if m.cfg.mode() == TLSNone {
			auth = gomail.SMTPAuthPlain // go-mail allows it unencrypted to a loopback host only
		}
		opts = append(opts, gomail.WithSMTPAuth(auth), gomail.WithUsername(m.cfg.Username), gomail.WithPassword(pw))
	}
	c, err := gomail.NewClient(m.cfg.Host, opts...)
	if err != nil {
		return err
	}
	return c.DialAndSendWithContext(ctx, msg)
}

// password is Password, or PasswordFile's content read now.
func (m *Mail) password() (string, error) {
	if m.cfg.PasswordFile == "" {
		return m.cfg.Password, nil
	}
	b, err := os.ReadFile(m.cfg.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("reading the SMTP password file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// secrets are the strings no error may carry: the password and the links.
func (m *Mail) secrets(ns []lifecycle.Notice) []string {
	var s []string
	if pw, err := m.password(); err == nil && pw != "" {
		s = append(s, pw)
	}
	for _, n := range ns {
		for _, l := range n.Links {
			s = append(s, l.URL)
		}
	}
	return s
}

// redactErr returns err, or, if its text carries one of secrets, a plain error with each of them
// replaced (and nothing to unwrap: the original would carry them).
func redactErr(err error, secrets []string) error {
	msg := err.Error()
	out := msg
	for _, s := range secrets {
		if s != "" {
			out = strings.ReplaceAll(out, s, "(redacted)")
		}
	}
	if out == msg {
		return err
	}
	return errors.New(out)
}

// MessageID is the Message-ID (without angle brackets) of the message holding the notices with
// these IDs: the first 32 hex digits of the SHA-256 of the ID, or of the sorted, distinct IDs
// joined by NUL for several, "@kustos".
func MessageID(noticeIDs ...string) string {
	ids := slices.Clone(noticeIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	sum := sha256.Sum256([]byte(strings.Join(ids, "\x00")))
	return hex.EncodeToString(sum[:])[:32] + "@" + MessageIDDomain
}

func ids(ns []lifecycle.Notice) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

// withRecipient drops the notices without To.
func withRecipient(ns []lifecycle.Notice) []lifecycle.Notice {
	out := ns[:0:0]
	for _, n := range ns {
		if strings.TrimSpace(n.To) != "" {
			out = append(out, n)
		}
	}
	return out
}

// recipientKey is the form of an address that batches and compares: trimmed, lower case.
func recipientKey(to string) string { return strings.ToLower(strings.TrimSpace(to)) }

func sameRecipient(a, b string) bool { return recipientKey(a) == recipientKey(b) }

// sortNotices orders a message's notices: soonest action first, then by ID; the same notice
// twice (one ID) once.
func sortNotices(ns []lifecycle.Notice) []lifecycle.Notice {
	out := slices.Clone(ns)
	slices.SortStableFunc(out, func(a, b lifecycle.Notice) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return slices.CompactFunc(out, func(a, b lifecycle.Notice) bool { return a.ID == b.ID })
}

// isLoopback: the hosts go-mail sends an unencrypted PLAIN password to.
func isLoopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}
