package submit

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The upload protocol's headers and media type (docs/submission.md, "The upload protocol").
const (
	// HeaderOffset is the tus protocol's Upload-Offset: the byte offset a PATCH appends at, and
	// in a response the number of bytes the server has committed.
	HeaderOffset = "Upload-Offset"
	// HeaderName names the submission in the request that creates the session.
	HeaderName = "Submission-Name"
	// ContentTypeChunk is the media type of a PATCH body (tus's).
	ContentTypeChunk = "application/offset+octet-stream"
	// ContentTypeJSON is the media type of the completion request and of the server's answers.
	ContentTypeJSON = "application/json"
)

// Completion is the body of the request that completes a session (client to server) and of the
// server's 200 answer to it: the archive's size in bytes and its SHA-256 in lower-case hex. The
// server's answer also names the submission.
type Completion struct {
	Name   string `json:"name,omitempty"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// ErrBadOffset is wrapped by ParseOffset's errors.
var ErrBadOffset = errors.New("bad " + HeaderOffset)

// ParseOffset reads an Upload-Offset value: a decimal number of bytes, 0 or more, nothing else
// (no sign, no spaces, no leading zeros but "0" itself).
func ParseOffset(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty", ErrBadOffset)
	}
	if len(s) > 19 {
		return 0, fmt.Errorf("%w: %q is too long", ErrBadOffset, truncate(s))
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: %q is not a number of bytes", ErrBadOffset, truncate(s))
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("%w: %q has a leading zero", ErrBadOffset, s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is out of range", ErrBadOffset, s)
	}
	return n, nil
}

// FormatOffset is ParseOffset's inverse.
func FormatOffset(n int64) string { return strconv.FormatInt(n, 10) }

// ErrBadCompletion is wrapped by ParseCompletion's errors.
var ErrBadCompletion = errors.New("bad completion")

// maxCompletion bounds the completion body a server reads.
const maxCompletion = 4 << 10

// ParseCompletion reads a completion body: one JSON object with size (bytes, 0 or more) and
// sha256 (64 hex digits, taken in lower case), and an optional name; unknown fields, a second
// value or a body over 4 KiB are refused.
func ParseCompletion(data []byte) (Completion, error) {
	var c Completion
	if len(data) > maxCompletion {
		return c, fmt.Errorf("%w: %d bytes, at most %d", ErrBadCompletion, len(data), maxCompletion)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return Completion{}, fmt.Errorf("%w: %w", ErrBadCompletion, err)
	}
	if d.More() {
		return Completion{}, fmt.Errorf("%w: more than one JSON value", ErrBadCompletion)
	}
	if c.Size < 0 {
		return Completion{}, fmt.Errorf("%w: size %d is negative", ErrBadCompletion, c.Size)
	}
	sum, err := ParseSHA256(c.SHA256)
	if err != nil {
		return Completion{}, fmt.Errorf("%w: %w", ErrBadCompletion, err)
	}
	c.SHA256 = sum
	return c, nil
}

// ParseSHA256 checks a SHA-256 in hex and returns it in lower case.
func ParseSHA256(s string) (string, error) {
	if len(s) != 64 {
		return "", fmt.Errorf("sha256 %q: want 64 hex digits", truncate(s))
	}
	if _, err := hex.DecodeString(s); err != nil {
		return "", fmt.Errorf("sha256 %q: want 64 hex digits", truncate(s))
	}
	return strings.ToLower(s), nil
}

// MaxNameLen bounds a submission's name.
const MaxNameLen = 128

// CheckName accepts a submission name a receiving server can use as a file name: 1 to 128 of
// A-Z a-z 0-9 . _ -, not starting with a dot.
func CheckName(s string) error {
	if s == "" {
		return errors.New("empty name")
	}
	if len(s) > MaxNameLen {
		return fmt.Errorf("name %q: longer than %d characters", truncate(s), MaxNameLen)
	}
	if s[0] == '.' {
		return fmt.Errorf("name %q: starts with a dot", s)
	}
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return fmt.Errorf("name %q: only letters, digits, '.', '_' and '-'", truncate(s))
		}
	}
	return nil
}

// truncate keeps an error about untrusted input short.
func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
