// Package harness owns the skeleton every bench shares. A bench's main calls Main with a Bench:
// its name, its flag parsing and its run. Run (which Main calls) parses the flags and exits 0
// after -h or 2 after a flag error (FlagExit), makes the context SIGINT or SIGTERM cancels
// (SignalContext), the timestamped log on stderr (NewLogf) and the temporary directory for
// Kustos's output (TempLog), logs the kustos binary and the machine, runs the bench, logs its
// error with the last lines of Kustos's output, prints and writes the report (Emit) and, at
// the end, keeps that directory or not and returns the exit code (Finish).
//
// A bench's parsing uses NewFlagSet, the flags every bench has (Flags, LogLevelFlag) and
// Flags.Parse; its run starts the control plane it measures on, with the setup and watch
// clients, by ControlPlane. Its own flags, its run and its report stay with the bench.
package harness
