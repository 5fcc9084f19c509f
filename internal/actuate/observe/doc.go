// Package observe is the observer-mode actuator, Kustos's default: it carries out a Change by
// telling people about it — a Warning Event on the target and one JSON log line per proposed field
// (one for the whole Change when it sets no fields: ScaleToZero, Delete, SetAnnotations) — and
// changes nothing else. The Recorder is also the pipeline's Reporter in every mode (progress
// Events, findings).
//
// Events get names derived from what they report, so writing the same decision twice (after a
// crash, or from two replicas) creates one Event, not two.
package observe
