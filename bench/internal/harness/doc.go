// Package harness owns the scaffolding that every bench's realMain and run repeat: the flags
// they all have and their checks (Flags, LogLevelFlag), the exit when parsing the flags failed
// (FlagExit), the context cancelled by SIGINT or SIGTERM (SignalContext), the timestamped log
// on stderr (NewLogf), the temporary directory for Kustos's output (TempLog), the control plane
// a run measures on (ControlPlane), printing and writing the report (Emit) and, at the end,
// keeping that directory or not and the exit code (Finish). A bench's own flags, the order it
// calls these in, its run and its report stay with the bench.
package harness
