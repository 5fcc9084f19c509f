package authorship

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/kustos-dev/kustos/api/v1alpha1"
)

// StampAnnotation holds a Cleaner's author stamp (JSON, see Stamp).
const StampAnnotation = "kustos.io/author"

// MinKeyBytes is the shortest signing key accepted.
const MinKeyBytes = 32

// MaxSkew is how much earlier than the Cleaner's creationTimestamp a stamp may be dated: the
// stamp's time is Kustos's clock, creationTimestamp the API server's, and a Cleaner is stamped
// just before the API server stores it. A stamp dated earlier was given to another Cleaner of
// the same name and spec (deleted since) and is refused.
const MaxSkew = 5 * time.Minute

// Stamp errors; every Verify error wraps one of them.
var (
	// ErrMissing: the Cleaner carries no stamp (it was stored while the webhook did not run).
	ErrMissing = errors.New("no author stamp")
	// ErrMalformed: the annotation is not a stamp.
	ErrMalformed = errors.New("malformed author stamp")
	// ErrForged: the stamp's signature does not match its content (edited, or another key).
	ErrForged = errors.New("author stamp not signed by this Kustos")
	// ErrSpecChanged: the spec changed since it was stamped (without the webhook).
	ErrSpecChanged = errors.New("the spec changed since its author was stamped")
	// ErrReplayed: the stamp is older than the Cleaner: it was given to an earlier one.
	ErrReplayed = errors.New("author stamp older than the Cleaner")
)

// Author is who created a Cleaner or last changed its spec, exactly as the API server
// authenticated them: the fields a SubjectAccessReview needs to ask about that person.
type Author struct {
	Username string              `json:"user"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// FromUserInfo is the author an AdmissionReview's userInfo names. Extra is kept: an authorizer
// (a webhook authorizer, scopes of a token) may decide on it.
func FromUserInfo(u authenticationv1.UserInfo) Author {
	a := Author{Username: u.Username, UID: u.UID, Groups: append([]string(nil), u.Groups...)}
	if len(u.Extra) > 0 {
		a.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			a.Extra[k] = append([]string(nil), v...)
		}
	}
	return a
}

// String names the author for a status message or a log line: the user name and groups.
func (a Author) String() string {
	if len(a.Groups) == 0 {
		return fmt.Sprintf("%q", a.Username)
	}
	return fmt.Sprintf("%q (groups %s)", a.Username, strings.Join(a.Groups, ", "))
}

// stamp is the annotation's JSON.
type stamp struct {
	V      int    `json:"v"`
	Author Author `json:"author"`
	// Spec is the base64url SHA-256 of the spec's canonical JSON.
	Spec string `json:"spec"`
	// At is when the stamp was made (Unix seconds).
	At  int64  `json:"at"`
	MAC string `json:"mac"`
}

// Signer stamps Cleaners and verifies their stamps with one key. Safe for concurrent use.
type Signer struct {
	key []byte
}

// NewSigner uses key (at least MinKeyBytes bytes; surrounding whitespace, as a mounted file has,
// is ignored).
func NewSigner(key []byte) (*Signer, error) {
	k := []byte(strings.TrimSpace(string(key)))
	if len(k) < MinKeyBytes {
		return nil, fmt.Errorf("the author signing key has %d bytes, want at least %d (e.g. `openssl rand -hex 32`)", len(k), MinKeyBytes)
	}
	return &Signer{key: k}, nil
}

// SpecDigest is the digest a stamp binds: SHA-256 of the spec's JSON (Go's encoding of the
// typed spec: fields in declaration order, map keys sorted, so the webhook and the controller
// compute it alike from the same stored spec).
func SpecDigest(spec any) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("encoding the spec: %w", err)
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// Sign returns the annotation value stamping author on the Cleaner namespace/name whose spec
// has digest specDigest (SpecDigest), at time at.
func (s *Signer) Sign(namespace, name, specDigest string, author Author, at time.Time) (string, error) {
	st := stamp{V: 1, Author: author, Spec: specDigest, At: at.Unix()}
	st.MAC = s.mac(namespace, name, st)
	b, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Verify returns the author the annotation value stamped on the Cleaner namespace/name, created
// at created, whose spec now has digest specDigest. A value that is empty, malformed, not signed
// with this key, dated more than MaxSkew before created, or given for another spec is an error
// wrapping ErrMissing, ErrMalformed, ErrForged, ErrReplayed or ErrSpecChanged.
func (s *Signer) Verify(value, namespace, name, specDigest string, created time.Time) (Author, error) {
	if value == "" {
		return Author{}, ErrMissing
	}
	if len(value) > 64<<10 {
		return Author{}, fmt.Errorf("%w: %d bytes", ErrMalformed, len(value))
	}
	var st stamp
	if err := json.Unmarshal([]byte(value), &st); err != nil {
		return Author{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if st.V != 1 || st.MAC == "" || st.Spec == "" || st.Author.Username == "" {
		return Author{}, fmt.Errorf("%w: version %d, fields missing", ErrMalformed, st.V)
	}
	if !hmac.Equal([]byte(st.MAC), []byte(s.mac(namespace, name, st))) {
		return Author{}, ErrForged
	}
	if at := time.Unix(st.At, 0); at.Before(created.Add(-MaxSkew)) {
		return Author{}, fmt.Errorf("%w: stamped %s, created %s", ErrReplayed, at.UTC().Format(time.RFC3339), created.UTC().Format(time.RFC3339))
	}
	if st.Spec != specDigest {
		return Author{}, fmt.Errorf("%w (by %s)", ErrSpecChanged, st.Author)
	}
	return st.Author, nil
}

// mac signs every field of st but MAC, length-prefixed so that no two stamps share an encoding.
func (s *Signer) mac(namespace, name string, st stamp) string {
	h := hmac.New(sha256.New, s.key)
	fields := []string{"kustos-cleaner-author-v1", namespace, name, st.Spec, strconv.FormatInt(st.At, 10),
		st.Author.Username, st.Author.UID, strconv.Itoa(len(st.Author.Groups))}
	fields = append(fields, st.Author.Groups...)
	keys := make([]string, 0, len(st.Author.Extra))
	for k := range st.Author.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fields = append(fields, strconv.Itoa(len(keys)))
	for _, k := range keys {
		fields = append(fields, k, strconv.Itoa(len(st.Author.Extra[k])))
		fields = append(fields, st.Author.Extra[k]...)
	}
	for _, f := range fields {
		fmt.Fprintf(h, "%d:%s|", len(f), f)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// Cleaners verifies the stamps of Cleaners (the Cleaner detector's Authors).
type Cleaners struct{ Signer *Signer }

// Author is the verified author of cl as it is now: its stamp checked against its namespace,
// name, creationTimestamp and current spec.
func (c Cleaners) Author(cl *v1alpha1.Cleaner) (Author, error) {
	digest, err := SpecDigest(cl.Spec)
	if err != nil {
		return Author{}, err
	}
	return c.Signer.Verify(cl.Annotations[StampAnnotation], cl.Namespace, cl.Name, digest, cl.CreationTimestamp.Time)
}
