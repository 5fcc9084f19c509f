package manifest

import (
	"errors"
	"strings"
)

// Files is the repeatable -f/--filename flag of the offline commands: file names, or - for
// stdin (ReadInput reads either).
type Files []string

func (f *Files) String() string { return strings.Join(*f, ",") }

// Set adds one file name; an empty one is an error.
func (f *Files) Set(v string) error {
	if v == "" {
		return errors.New("empty file name (use - for stdin)")
	}
	*f = append(*f, v)
	return nil
}

// Type names the value in help.
func (f *Files) Type() string { return "FILE" }
