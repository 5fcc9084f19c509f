package vsphere

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
)

// Config is how Kustos reaches vSphere (the --vsphere-* flags).
type Config struct {
	// URL is the vCenter's address, https://vcenter.example.com (the SDK path /sdk is added
	// when the URL has no path). Only https: the login carries the password.
	URL string
	// CredentialsFile is the mounted Secret: a directory holding the keys username and
	// password (a kubernetes.io/basic-auth Secret mounted as a volume), or a file of two lines,
	// the username then the password.
	CredentialsFile string
	// CAFile is a PEM file of the CA that signs the vCenter's certificate (besides the system's).
	CAFile string
	// Insecure skips the certificate check: an explicit choice, never a default.
	Insecure bool
	// Datacenter is the datacenter's name; Folders the VM folders crawled in it (paths below
	// its VM folder, "ci/agents", or inventory paths, "/DC0/vm/ci/agents"); QuarantineFolder
	// where expired VMs go (same forms). Ignore are VM names or folder paths never crawled.
	Datacenter       string
	Folders          []string
	QuarantineFolder string
	Ignore           []string
}

// ErrConfig is what every configuration error matches.
var ErrConfig = errors.New("vsphere configuration")

// Credentials are a vSphere login. String never shows the password.
type Credentials struct {
	Username, password string
}

func (c Credentials) String() string { return "vSphere user " + c.Username }

// ReadCredentials reads the credentials from path (Config.CredentialsFile): a directory with
// the files username and password, or a file of two lines. Errors name the path and what is
// missing, never a value.
func ReadCredentials(path string) (Credentials, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Credentials{}, fmt.Errorf("--vsphere-credentials-file: %w", err)
	}
	var user, pass string
	if st.IsDir() {
		u, err := os.ReadFile(filepath.Join(path, "username"))
		if err != nil {
			return Credentials{}, fmt.Errorf("--vsphere-credentials-file: the Secret mounted at %s needs the key username: %w", path, err)
		}
		p, err := os.ReadFile(filepath.Join(path, "password"))
		if err != nil {
			return Credentials{}, fmt.Errorf("--vsphere-credentials-file: the Secret mounted at %s needs the key password: %w", path, err)
		}
		user, pass = strings.TrimSpace(string(u)), strings.TrimRight(string(p), "\r\n")
	} else {
		f, err := os.Open(path)
		if err != nil {
			return Credentials{}, fmt.Errorf("--vsphere-credentials-file: %w", err)
		}
		defer f.Close()
		s := bufio.NewScanner(f)
		var lines []string
		for s.Scan() && len(lines) < 3 {
			lines = append(lines, strings.TrimRight(s.Text(), "\r"))
		}
		if err := s.Err(); err != nil {
			return Credentials{}, fmt.Errorf("--vsphere-credentials-file: reading %s: %w", path, err)
		}
		if len(lines) < 2 {
			return Credentials{}, fmt.Errorf("--vsphere-credentials-file: %s has %d lines; want two, the username then the password: %w", path, len(lines), ErrConfig)
		}
		user, pass = strings.TrimSpace(lines[0]), lines[1]
	}
	if user == "" || pass == "" {
		return Credentials{}, fmt.Errorf("--vsphere-credentials-file: %s: the username or the password is empty: %w", path, ErrConfig)
	}
	return Credentials{Username: user, password: pass}, nil
}

// Client is a logged-in connection to one datacenter. It logs in again when the session
// expired (vCenter ends idle sessions after 30 minutes by default). Safe for concurrent use.
type Client struct {
	cfg   Config
	creds Credentials

	mu  sync.Mutex
	c   *vim25.Client
	dc  *object.Datacenter
	vmf *object.Folder // the datacenter's VM folder
}

// New checks cfg and returns a Client that connects on first use.
func New(cfg Config, creds Credentials) (*Client, error) {
	if _, err := sdkURL(cfg.URL); err != nil {
		return nil, err
	}
	if cfg.Datacenter == "" {
		return nil, fmt.Errorf("--vsphere-datacenter is empty: %w", ErrConfig)
	}
	return &Client{cfg: cfg, creds: creds}, nil
}

// sdkURL is the vCenter's SDK endpoint.
func sdkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Scheme != "https" {
		// Only https: the SOAP login carries the password, which http would send in clear text.
		shown := fmt.Sprintf("%q", raw)
		if strings.Contains(raw, "@") {
			shown = "(not shown: it may hold a password)"
		}
		return nil, fmt.Errorf("--vsphere-url=%s: want https://HOST (the vCenter; never http, the login carries the password): %w", shown, ErrConfig)
	}
	if u.User != nil {
		return nil, fmt.Errorf("--vsphere-url: credentials go in --vsphere-credentials-file, not the URL: %w", ErrConfig)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = vim25.Path
	}
	return u, nil
}

// connect returns the logged-in client, logging in (again) when needed.
func (c *Client) connect(ctx context.Context) (*vim25.Client, *object.Datacenter, *object.Folder, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c != nil {
		if ok, err := session.NewManager(c.c).SessionIsActive(ctx); err == nil && ok {
			return c.c, c.dc, c.vmf, nil
		}
		// SessionIsActive needs a privilege some accounts lack; UserSession tells too.
		if s, err := session.NewManager(c.c).UserSession(ctx); err == nil && s != nil {
			return c.c, c.dc, c.vmf, nil
		}
		c.c = nil
	}
	u, err := sdkURL(c.cfg.URL)
	if err != nil {
		return nil, nil, nil, err
	}
	sc := soap.NewClient(u, c.cfg.Insecure)
	if c.cfg.CAFile != "" {
		if err := sc.SetRootCAs(c.cfg.CAFile); err != nil {
			return nil, nil, nil, fmt.Errorf("--vsphere-ca-file=%s: %w", c.cfg.CAFile, err)
		}
	}
	vc, err := vim25.NewClient(ctx, sc)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("connecting to vSphere at %s: %w", u.Host, err)
	}
	if err := session.NewManager(vc).Login(ctx, url.UserPassword(c.creds.Username, c.creds.password)); err != nil {
		// The error is vSphere's (InvalidLogin); it names no password.
		return nil, nil, nil, fmt.Errorf("logging in to vSphere at %s as %s: %w", u.Host, c.creds.Username, err)
	}
	dc, err := find.NewFinder(vc).Datacenter(ctx, c.cfg.Datacenter)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--vsphere-datacenter=%s: %w", c.cfg.Datacenter, err)
	}
	folders, err := dc.Folders(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading the folders of datacenter %s: %w", c.cfg.Datacenter, err)
	}
	c.c, c.dc, c.vmf = vc, dc, folders.VmFolder
	return vc, dc, folders.VmFolder, nil
}

// Close logs out.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		return nil
	}
	err := session.NewManager(c.c).Logout(ctx)
	c.c = nil
	return err
}
