package quotahistory

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Peak is the highest usage of one resource over the window, and when it was seen.
type Peak struct {
	Value resource.Quantity
	At    time.Time
}

// Window is what is known of one quota's usage over [Start, End].
type Window struct {
	// Start and End bound the window that was asked for (End is the check's now).
	Start, End time.Time
	// Peaks holds the peak of each resource the history knows; a resource missing here has no
	// history at all.
	Peaks map[corev1.ResourceName]Peak
	// Days holds, for each resource of Peaks, the peak of every day of the window that has
	// one, oldest first: what a chart of the window draws. A day without a sample is left out
	// (Complete says whether any is missing). One entry a day: a month at most per resource.
	Days map[corev1.ResourceName][]DayPeak
	// Complete is true only when the history reaches back to Start for every resource in
	// Peaks and no part of the answer was partial or missing.
	Complete bool
	// Incomplete says why Complete is false, in words a reviewer reads ("history reaches back
	// to 2026-11-20T08:00:00Z, the window starts 2026-11-15T08:00:00Z", "Prometheus answered
	// partially: …"); empty when Complete.
	Incomplete string
}

// DayPeak is the peak of one resource over one day of the window.
type DayPeak struct {
	// Day is the day's start (UTC midnight).
	Day   time.Time
	Value resource.Quantity
}
