// Package buildinfo says which Kustos is running: the version, commit and date `make build`
// writes into the binary with -ldflags -X, else what the Go toolchain recorded (the module
// version, vcs.revision and vcs.time), and the Go version. `kustos version`, the starting log
// line, the User-Agent and the kustos_build_info metric all read it here.
package buildinfo
