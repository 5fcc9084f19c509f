// Package doccheck keeps Kustos's user documentation (README.md and docs/) walkable: every
// relative link reaches a file of the repository and every #anchor a heading GitHub renders,
// nothing links outside the repository (a link to a folder beside the checkout or to a web page
// breaks for whoever reads a copy, a release archive or a fork), and the README stays short
// enough to lead to an install instead of being the reference.
//
// It reads Markdown the way GitHub renders it, as far as links and headings go: fenced code
// blocks and code spans hold no links, a bare http(s) URL in text is a link (GitHub's autolink
// extension), and a heading's anchor is GitHub's slug of its text with -1, -2 … for repeats.
// The checks themselves run as the package's test.
//
// The same holds for the comments of the Go code (CheckComments): a comment that cites a
// document outside the repository (a design document by number or section, a file beside the
// checkout) says nothing to whoever reads the code, so it says the rule itself or points to a
// page under docs/.
package doccheck
