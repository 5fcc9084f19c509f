// Package inactivityflags defines the inactivity detector's flags once for `kustos run` and
// `kustos inactivity plan`, and reads the activity sources they name (--inactivity-config), into
// the detector's inactivity.Options.
package inactivityflags
