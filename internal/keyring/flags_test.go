package keyring

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFlags: a key from its file, none without either flag, and an error naming the flag
// for both flags at once, a missing file or a Secret name that is not namespace/name.
func TestReadFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, secret string
		wantKey, wantFlag  string
		wantErr            string
	}{
		{"file", file, "", "k", "--x-key-file=" + file, ""},
		{"neither", "", "", "", "", ""},
		{"both", file, "ns/name", "", "", "--x-key-file and --x-key-secret: give one"},
		{"missing file", file + ".gone", "", "", "", "--x-key-file: "},
		{"bad Secret name", "", "name", "", "", "--x-key-secret: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, flag, err := ReadFlags(t.Context(), nil, "x-key", tc.file, tc.secret)
			if string(key) != tc.wantKey || flag != tc.wantFlag || (err == nil) != (tc.wantErr == "") ||
				(err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("ReadFlags = %q, %q, %v; want %q, %q, %q", key, flag, err, tc.wantKey, tc.wantFlag, tc.wantErr)
			}
		})
	}
}
