package main

import (
	"runtime/debug"
	"strconv"
)

// defaultGCPercent is --gogc's default. Most of Kustos's heap is its informer caches, which
// live as long as the process: Go's default of 100 lets the heap grow to twice that before each
// collection, memory held for garbage that a cache-heavy process does not make quickly
// (Prometheus lowered its default to 75 for the same reason). bench/wholecluster measured the
// trade at 10,000 tenants: peak RSS 321 -> 239-241 MiB; the run's CPU grew by a third on a busy
// machine and not on a quiet one (docs/performance.md, "Whole cluster").
const defaultGCPercent = 50

// minGCPercent is the lowest --gogc accepted.
const minGCPercent = 10

// applyGCPercent sets Go's garbage-collection target to percent (--gogc), unless the GOGC
// environment variable is set (not empty; the runtime ignores an empty one too): the runtime
// has applied that one already, and it wins, as it does for any Go program. It returns the
// target in force and where it came from.
func applyGCPercent(percent int, lookupEnv func(string) (string, bool)) (target, source string) {
	if v, ok := lookupEnv("GOGC"); ok && v != "" {
		return v, "GOGC"
	}
	debug.SetGCPercent(percent)
	return strconv.Itoa(percent), "--gogc"
}
