package expiry

import "github.com/kustos-dev/kustos/internal/detect/detectkit"

// Supersedes: a removal for a later deadline (a new cycle after an extension or a new
// expires-at) replaces a declined or open one; the same deadline again does not.
var Supersedes = detectkit.LaterEvidence("deadline")
