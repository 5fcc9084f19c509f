// Package report owns what the benches' reports have in common: the verdict of a measurement
// against its target (Verdict, Judge, Combine), one line of a result table (Row) and the
// markdown table itself (Table), which also says whether a row broke the run or missed its
// target, and how durations are written (MS, Latency). What a bench measures, its own table
// layout (controlplane's) and the prose around a table stay with the bench.
package report
