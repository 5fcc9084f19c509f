package cli

import (
	"fmt"
	"slices"
	"strings"
)

// Enum is a flag value that is one of a fixed set of words; any other value is refused with
// the list of the words.
type Enum struct {
	V       *string
	Allowed []string
}

// String is the value.
func (e Enum) String() string {
	if e.V == nil {
		return ""
	}
	return *e.V
}

// Set takes v if it is one of the allowed words.
func (e Enum) Set(v string) error {
	if !slices.Contains(e.Allowed, v) {
		return fmt.Errorf("want %s", strings.Join(e.Allowed, ", "))
	}
	*e.V = v
	return nil
}

// Type names the value in help: the allowed words.
func (e Enum) Type() string { return strings.Join(e.Allowed, "|") }
