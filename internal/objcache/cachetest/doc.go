// Package cachetest holds the tests of objcache.Cache against a real API server (started
// through envtest by internal/testenv): a cache whose informers hold packed objects is read as
// one whose informers do not. Apart from package objcache so that objcache's own tests (its
// round trips and fuzz target) need no control plane. It has no code of its own.
package cachetest
