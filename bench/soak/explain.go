package main

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// explainLines is how many of Kustos's last log lines about one stalled pull request a failed
// run prints.
const explainLines = 12

// logsAbout are, for each stalled pull request ("#N <branch> (…)", as Checker.Stalled says),
// the last explainLines lines of the replicas' logs that name its target: a liveness failure in
// CI, where the kept output is gone with the machine, says what Kustos last did about it.
func logsAbout(logDir string, stalled []string) []string {
	files, _ := filepath.Glob(filepath.Join(logDir, "kustos-*.log"))
	sort.Strings(files)
	var out []string
	for _, s := range stalled {
		f := strings.Fields(s)
		if len(f) < 2 {
			continue
		}
		target := branchTarget(f[1])
		if target == "" {
			continue
		}
		out = append(out, "Kustos's last lines about "+f[0]+" "+target+":")
		for _, file := range files {
			for _, l := range lastMatching(file, target, explainLines) {
				out = append(out, "  "+filepath.Base(file)+": "+l)
			}
		}
	}
	return out
}

// branchTarget is "<namespace>/<name>" of a Kustos branch ".../<detector>/<namespace>/<name>",
// as the logs write the target in its Key.
func branchTarget(branch string) string {
	parts := strings.Split(branch, "/")
	if len(parts) < 3 {
		return ""
	}
	return "/" + parts[len(parts)-2] + "/" + parts[len(parts)-1] + "\""
}

// lastMatching are the last n lines of file that contain s (none when it cannot be read).
func lastMatching(file, s string, n int) []string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var ring []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			ring = append(ring, sc.Text())
			if len(ring) > n {
				ring = ring[1:]
			}
		}
	}
	return ring
}
