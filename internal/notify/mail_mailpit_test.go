package notify

import (
	"testing"

	"github.com/kustos-dev/kustos/internal/testenv"
)

func selfSignedCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile, err := testenv.SelfSignedCert(t.TempDir(), "mailpit test")
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// lockedBuffer collects a process's output.
