// Package inactivityflags defines the inactivity detector's flags once for `kustos run` and
// `kustos inactivity plan`. It is apart from package cli because it fills app.InactivityOptions,
// and app imports the status command, which takes its flags from cli.
package inactivityflags
