//go:build tools

// Package tools pins Mailpit, which hack/setup-testbin.sh builds into bin/mailpit.
package tools

import (
	_ "github.com/axllent/mailpit"
)
