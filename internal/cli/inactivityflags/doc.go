// Package inactivityflags defines the inactivity detector's flags once for `kustos run` and
// `kustos inactivity plan`, and reads the activity sources they name (--inactivity-config). It
// fills app.InactivityOptions, so it is apart from package cli, which imports nothing of app.
package inactivityflags
