// Package gitops is where Kustos meets the GitOps repository: it finds the manifest that defines
// a target (index), edits it without disturbing anything else (yamledit), talks to GitHub
// (github) and, in tests, to a local GitHub-compatible server (githubtest). The PR actuator
// that strings these together into one pull request per change Key builds on them.
package gitops
