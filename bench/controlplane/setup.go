package main

import (
	"fmt"

	"github.com/kustos-dev/kustos/bench/internal/objects"
)

const quotaName = objects.QuotaName

func namespaceName(i int) string { return fmt.Sprintf("bench-%05d", i) }

// namespaceNames are the names of the scenario's n namespaces.
func namespaceNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = namespaceName(i)
	}
	return out
}
