package inactivity

import "github.com/kustos-dev/kustos/internal/detect/detectkit"

// Supersedes: a pause or deletion for a later idle period replaces a declined or open one; the
// same period again does not.
var Supersedes = detectkit.LaterEvidence("idleSince")
