package cloudevent

import (
	"math"
	"testing"
	"time"
)

// The SDK's exponential backoff overflows without a word and then panics on a negative wait;
// schedule must never hand it retry parameters that do.
func TestSchedule(t *testing.T) {
	for _, tc := range []struct {
		sender  Sender
		retries int
		period  time.Duration
	}{
		{Sender{}, DefaultRetries, DefaultBackoff / 2},
		{Sender{Retries: -1}, 0, DefaultBackoff / 2},
		{Sender{Retries: 2, Backoff: time.Nanosecond}, 2, time.Nanosecond},
		{Sender{Retries: 1000, Backoff: time.Millisecond}, maxRetries, 500 * time.Microsecond},
		{Sender{Retries: 30, Backoff: 1000 * time.Hour}, 12, 500 * time.Hour},
	} {
		retries, period := tc.sender.schedule()
		if retries != tc.retries || period != tc.period {
			t.Errorf("%+v: schedule = %d, %v; want %d, %v", tc.sender, retries, period, tc.retries, tc.period)
		}
		if retries > 0 && period > time.Duration(math.MaxInt64>>retries) {
			t.Errorf("%+v: the last wait overflows", tc.sender)
		}
	}
}
