package helmrelease

import (
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// testLogger sends helm's debug output to the test log, shown only when a test fails or -v. It
// goes quiet when the test ends: a helm run abandoned at a timeout may still log, and t.Log after
// the end of a test panics.
func testLogger(t *testing.T) logr.Logger {
	var mu sync.Mutex
	done := false
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		done = true
	})
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Log(prefix, args)
		}
	}, funcr.Options{Verbosity: 1})
}
