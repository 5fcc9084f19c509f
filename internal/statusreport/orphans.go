package statusreport

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kustos-dev/kustos/internal/orphans"
)

// PrintOrphans writes rows as a table or as JSON lines.
func PrintOrphans(w io.Writer, rows []orphans.Row, format string) error {
	if format == "json" {
		return jsonLines(w, rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tMISSING\tPROBLEM\tAGE")
	for _, r := range rows {
		missing, problem := strings.Join(r.Missing, ","), r.Problem
		if missing == "" {
			missing = "-"
		}
		if problem == "" {
			problem = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Target, missing, problem, r.Age)
	}
	return tw.Flush()
}
