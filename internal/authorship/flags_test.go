package authorship

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadSigner: the --cleaner-author-key-* flags give a Signer, none when neither is set, and
// errors that name the flag. (The Secret form is keyring's, tested there.)
func TestReadSigner(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", strings.Repeat("k", MinKeyBytes)+"\n")
	short := write("short", "too short")
	for _, tc := range []struct {
		name, file, secret string
		signer             bool
		want               string // "": no error
	}{
		{"neither", "", "", false, ""},
		{"key file", good, "", true, ""},
		{"missing file", filepath.Join(dir, "gone"), "", false, "--cleaner-author-key-file"},
		{"short key", short, "", false, "--cleaner-author-key-file=" + short + ": the author signing key has 9 bytes"},
		{"both", good, "kustos/author-key", false, "--cleaner-author-key-file and --cleaner-author-key-secret: give one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ReadSigner(context.Background(), nil, tc.file, tc.secret)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("ReadSigner: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("ReadSigner: %v, want %q", err, tc.want)
			}
			if (s != nil) != tc.signer {
				t.Errorf("signer %v, want one: %t", s, tc.signer)
			}
		})
	}
}
