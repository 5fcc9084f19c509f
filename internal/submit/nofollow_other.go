//go:build !unix

package submit

// oNoFollow: elsewhere the os.Root and the same-file check keep links out.
const oNoFollow = 0
