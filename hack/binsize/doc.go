// Command binsize measures what the kustos binary costs before it does any work: its size by
// module (from the symbol table, `go tool nm -size`), the package initialisation each module
// runs at start (GODEBUG=inittrace=1 of `kustos version`) and the peak RSS of `kustos version`
// and `kustos run --help`, the floor under every figure the benches report.
//
// Code is paged in from the file as it runs, and a Go binary runs the init function of every
// package it links, whether a feature uses it or not: a module's text size and init cost are
// what linking it costs at start. `make binsize` builds bin/kustos as `make build` does and
// prints the report as markdown (docs/performance.md, "The binary").
//
// The symbol table must be there (no -ldflags=-s, which the image's build uses); a stripped
// binary still gets its sections, init costs and RSS reported.
package main
