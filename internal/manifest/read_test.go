package manifest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(path, []byte("kind: X\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	name, data, err := ReadInput(path, strings.NewReader("ignored"))
	if err != nil || name != path || string(data) != "kind: X\n" {
		t.Errorf("file: %q %q %v", name, data, err)
	}
	name, data, err = ReadInput("-", strings.NewReader("from stdin"))
	if err != nil || name != "<stdin>" || string(data) != "from stdin" {
		t.Errorf("stdin: %q %q %v", name, data, err)
	}
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	_, _, err = ReadInput(missing, nil)
	var ie *InputError
	if !errors.As(err, &ie) || err.Error() != missing+": cannot read: no such file or directory" {
		t.Errorf("missing file: %v", err)
	}
}

func TestReadInputTooLarge(t *testing.T) {
	defer func(old int64) { maxInputSize = old }(maxInputSize)
	maxInputSize = 1 << 20
	if _, _, err := ReadInput("-", bytes.NewReader(make([]byte, 1<<20))); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	_, data, err := ReadInput("-", bytes.NewReader(make([]byte, 1<<20+1)))
	if err == nil || err.Error() != "<stdin>: input is larger than 1 MiB; split it" || data != nil {
		t.Errorf("over the limit: %v (%d bytes)", err, len(data))
	}
}
