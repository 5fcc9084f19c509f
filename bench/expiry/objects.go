package main

import (
	"fmt"

	"github.com/kustos-dev/kustos/bench/internal/expirysched"
)

// The Event reasons of internal/detect/expiry (bench/internal/expirysched spells them out).
const (
	reasonWarning = expirysched.ReasonWarning
	reasonDue     = expirysched.ReasonDue

	scheduledNamespace = "expiry-scheduled"
)

func namespaceName(i int) string { return fmt.Sprintf("expiry-%03d", i) }

// idleName is idle Deployment i, in namespace i mod namespaces.
func idleName(i int) string { return fmt.Sprintf("env-%05d", i) }
