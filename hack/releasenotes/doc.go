// Command releasenotes prints a release's notes: the section of CHANGELOG.md headed
// `## [<version>]` (with or without ` - <date>` after it), up to the next `## ` heading, with
// relative links made absolute under -link-base so that they work on the release's page. The
// release workflow publishes its output as the GitHub release's notes; a tag whose version has
// no section, or an empty one, fails the release instead of publishing notes that say nothing.
package main
