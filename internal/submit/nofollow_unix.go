//go:build unix

package submit

import "syscall"

// oNoFollow makes the open of a file fail when its last element is a symbolic link.
const oNoFollow = syscall.O_NOFOLLOW
