// Package promrun is the real Prometheus the control-plane benchmarks that need activity
// (bench/inactivity, bench/wholecluster) run beside Kustos: a promtest.TB for a command rather
// than a test (TB), an exporter of every target's activity as a real cluster's ingress-nginx and
// SSH bastion expose it (Exporter), and bin/prometheus started to scrape it (Start).
package promrun
