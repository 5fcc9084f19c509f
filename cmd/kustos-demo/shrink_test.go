package main

import (
	"testing"
	"time"
)

// TestWindowExcerpt: a shrink pull request's usage window (table and chart) is printed, and
// nothing else of the body.
func TestWindowExcerpt(t *testing.T) {
	const window = "#### Usage window\n\n| resource | peak |\n|---|---:|\n| `requests.cpu` | 2 |\n\n`requests.cpu` in cores: the bars.\n\n```mermaid\nxychart-beta\n    bar [2, 1]\n```"
	for _, tc := range []struct {
		name, body, want string
	}{
		{"no window", "## Resize\n\nno chart\n", ""},
		{"table and chart, not what follows", "## Shrink\n\n" + window + "\n\n### Evidence\n\n```mermaid\nother\n```\n", window + "\n"},
		{"two charts", window + "\n\nb\n\n```mermaid\ny\n```\n", window + "\n\nb\n\n```mermaid\ny\n```\n"},
		{"a table without a chart", "#### Usage window\n\n| a |\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := windowExcerpt(tc.body); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestShrinkHistory: the backfilled history reaches back past the 1d window's start, ends at
// end, and holds the one peak inside the window.
func TestShrinkHistory(t *testing.T) {
	end := time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)
	_, peakAt := shrinkHistory(end)
	if want := end.Add(-peakAgo); !peakAt.Equal(want) {
		t.Errorf("peak at %s, want %s", peakAt, want)
	}
	if peakAt.Before(end.Add(-24 * time.Hour)) {
		t.Errorf("peak at %s is outside the 1d window ending %s", peakAt, end)
	}
}
