// Package lifecycle owns the vocabulary every detector and actuator shares: a Change (what
// should be different, on which object, and why), its stable Key, and where a change stands.
// It imports nothing of ours, so detectors and actuators can both depend on it.
package lifecycle
