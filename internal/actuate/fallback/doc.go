// Package fallback holds the actuator of PR mode for detectors whose targets may never have
// lived in Git (a Cleaner's preview objects, an expiring Deployment a CI job created): the
// Change is proposed as a pull request, and carried out directly in the cluster when no manifest
// in the repository defines its target.
package fallback
