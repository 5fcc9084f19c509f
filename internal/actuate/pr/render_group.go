package pr

import (
	"fmt"
	"strings"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TrailerMember names each target a group's commit proposes for (besides Kustos-Key, which
// names the group): a member's Lease records the group's head, and IsOwnCommit must know it as
// Kustos's own for that member too.
const TrailerMember = "Kustos-Member"

// GroupTitle is "<detector>(<label>): <what> <n> <kinds>", e.g.
// "expiry(namespace team-a): delete 12 Deployments".
func GroupTitle(g lifecycle.Group, included []lifecycle.Change) string {
	detector, _, _, _ := g.Key.GroupParts()
	return truncate(detector+"("+g.Label+"): "+groupSummary(included), maxTitle)
}

// groupSummary is "delete 3 Deployments, scale 2 StatefulSets to zero": per operation and kind,
// in the order first met.
func groupSummary(cs []lifecycle.Change) string {
	type opKind struct {
		op         lifecycle.EditOp
		verb, kind string
	}
	counts := map[opKind]int{}
	var order []opKind
	for _, c := range cs {
		k := opKind{c.Edit.Op, c.Verb, c.Target.Kind}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		n := counts[k]
		kind := k.kind
		if n > 1 {
			kind += "s"
		}
		switch {
		case k.verb != "":
			parts = append(parts, fmt.Sprintf("%s %d %s", k.verb, n, kind))
		case k.op == lifecycle.EditDelete:
			parts = append(parts, fmt.Sprintf("delete %d %s", n, kind))
		case k.op == lifecycle.EditScaleToZero:
			parts = append(parts, fmt.Sprintf("scale %d %s to zero", n, kind))
		case k.op == lifecycle.EditSetAnnotations:
			parts = append(parts, fmt.Sprintf("annotate %d %s", n, kind))
		default:
			parts = append(parts, fmt.Sprintf("edit %d %s", n, kind))
		}
	}
	return strings.Join(parts, ", ")
}

// GroupCommitMessage is the title, one line per member and the trailers by which Kustos knows
// its own commit: the group's key, every member's key, and the tree.
func GroupCommitMessage(g lifecycle.Key, included []lifecycle.Change, title, tree string) string {
	var b strings.Builder
	b.WriteString(title + "\n\n")
	for _, c := range included {
		b.WriteString("- " + truncate(c.Target.String()+": "+c.Summary, 300) + "\n")
	}
	b.WriteString("\n" + TrailerKey + ": " + string(g))
	for _, c := range included {
		b.WriteString("\n" + TrailerMember + ": " + string(c.Key))
	}
	b.WriteString("\n" + TrailerTree + ": " + tree)
	return b.String()
}

// GroupBody renders a group's PR description: what the group shares, every member with what
// changes, why (its summary and evidence) and how to keep it, the files the commit touches, and
// the hidden key marker. Past GitHub's body limit the members not shown are counted. It is a
// pure function of its inputs, so an unchanged group never edits the PR.
func GroupBody(g lifecycle.Group, included []lifecycle.Change, results map[lifecycle.Key]MemberResult, files []FileChange, cluster string) string {
	var b strings.Builder
	b.WriteString(Marker(g.Key) + "\n")
	fmt.Fprintf(&b, "Kustos proposes to **%s** of %s", md(groupSummary(included)), md(g.Label))
	if cluster != "" {
		fmt.Fprintf(&b, " in cluster `%s`", code(cluster))
	}
	fmt.Fprintf(&b, ": %d targets, one commit.\n\n", len(included))

	b.WriteString("| target | change | file |\n|---|---|---|\n")
	for _, c := range included {
		r := results[c.Key]
		fmt.Fprintf(&b, "| %s `%s` | %s | `%s` (document %d) |\n", md(c.Target.Kind), code(scope(c.Target)),
			cell(memberSummary(c, r)), code(r.Location.Path), r.Location.Doc+1)
	}
	b.WriteString("\n")
	var deleted []string
	for _, f := range files {
		if f.Content == nil {
			deleted = append(deleted, "`"+code(f.Path)+"`")
		}
	}
	if len(deleted) > 0 {
		fmt.Fprintf(&b, "Deletes %s, and takes each out of the kustomizations that list it; comments and formatting of every other file are kept.\n\n", strings.Join(deleted, ", "))
	}

	b.WriteString("### Why, and how to keep a target\n\n")
	b.WriteString("Each target below says why Kustos proposes its change and how its owner keeps it. " +
		"A target kept (extended, used again, or opted out) is taken out of this pull request; closing it declines the change for every target in it.\n\n")
	footer := "\n---\n<sub>Opened by Kustos. Do not edit the branch: Kustos rebuilds it when the base branch moves or the group's targets change.</sub>\n"
	for i, c := range included {
		charts := 0
		if i < groupChartMembers {
			charts = maxChartsPerBody
		}
		section := memberSection(c, charts)
		if b.Len()+len(section)+len(footer)+200 > maxBody {
			fmt.Fprintf(&b, "_%d more targets are not shown here (GitHub limits a description's length); the table above lists them all._\n\n", len(included)-i)
			break
		}
		b.WriteString(section)
	}
	b.WriteString(footer)
	return truncate(b.String(), maxBody)
}

// memberSummary is a member's change in a few words for the table.
func memberSummary(c lifecycle.Change, r MemberResult) string {
	switch c.Edit.Op {
	case lifecycle.EditDelete:
		return "delete"
	case lifecycle.EditScaleToZero:
		for _, f := range r.Fields {
			if f.Old != "" {
				return "scale to zero (replicas " + f.Old + " → 0)"
			}
		}
		return "scale to zero"
	}
	parts := make([]string, 0, len(r.Fields))
	for _, f := range r.Fields {
		parts = append(parts, fieldName(f.Path)+" → "+f.New)
	}
	return "set " + strings.Join(parts, ", ")
}

// memberSection is one member's "why" and "how to keep it", with up to charts charts of its
// usage window.
func memberSection(c lifecycle.Change, charts int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#### %s `%s`\n\n", md(c.Target.Kind), code(scope(c.Target)))
	if c.Summary != "" {
		b.WriteString(md(truncate(c.Summary, 2000)) + "\n\n")
	}
	writeEvidence(&b, c.Evidence, charts)
	if c.OptOut != nil {
		if c.OptOut.Keep != "" {
			fmt.Fprintf(&b, "To keep it: %s.", md(c.OptOut.Keep))
		}
		if c.Target.Namespace != "" && c.OptOut.Annotation != "" {
			fmt.Fprintf(&b, " To stop Kustos for its whole namespace: `kubectl annotate namespace %s '%s=%s'`.",
				code(c.Target.Namespace), code(c.OptOut.Annotation), code(c.OptOut.Value))
		}
		b.WriteString("\n\n")
	}
	return b.String()
}
