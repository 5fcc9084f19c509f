// Package promtest runs a real Prometheus for tests of Prometheus as an activity source (the
// inactivity detector and the end-to-end tests). It owns everything under
// internal/activity/promtest/ and nothing else; the binaries, bin/prometheus and bin/promtool,
// are built by hack/setup-testbin.sh (`make testbin`) from the version pinned in
// hack/tools/prometheus/go.mod. They are found in $KUSTOS_TESTBIN, else in <repo root>/bin; a
// missing binary fails the test with "run make testbin", it never skips it.
//
// Three parts, used together:
//
//   - [Exporter]: a loopback HTTP server exposing a client_golang Registry, for live metrics a
//     test sets (and changes) while Prometheus scrapes them.
//   - [History]: past samples, weeks old if need be, as OpenMetrics text.
//   - [Start]: bin/prometheus on a free loopback port with a fresh data directory, into which
//     bin/promtool has backfilled the History (`promtool tsdb create-blocks-from openmetrics`)
//     before Prometheus starts, and which scrapes the Exporters (job "kustos-test"). It is
//     stopped when the test ends; [Server.Stop] stops it earlier, to test "Prometheus is down".
//
// What the real thing requires, found in promtool's and the TSDB's code and tried against the
// binaries (Prometheus 3.16):
//
//   - Backfilled samples must be older than the first scrape: the TSDB accepts scraped samples
//     only after the end of its newest block (the newest history sample + 1ms), for all series.
//     promtool itself accepts any timestamp, also "now" or the future; a history sample an hour
//     ahead made Prometheus drop every scrape as "out of bounds", up included. Start refuses a
//     History that is not wholly in the past; history up to a minute before Start is fine
//     (TestHistoryThenScrape).
//   - The retention must cover the history: Prometheus measures it back from the newest block
//     and deletes older blocks at start (with the default, 15 days, history from 3 weeks and
//     from an hour ago lost its 3-week-old block). Start sets 10 years.
//   - promtool writes one block per 2 hours of history unless --max-block-duration says
//     otherwise (253 blocks for three weeks of hourly samples); Start passes 31 days, which
//     promtool rounds down to 486h: two blocks.
//   - Prometheus takes new scrape targets from discovery every 5s, the first time included;
//     Start lowers that (a hidden flag) so that the first scrape comes within a second or so.
//   - OpenMetrics timestamps are read as float seconds and truncated to milliseconds, so
//     History writes whole seconds (see [History]).
//   - A counter's samples are named <family>_total; the TYPE line names the family.
package promtest
