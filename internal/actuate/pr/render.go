package pr

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/gitops/index"
	"github.com/kustos-dev/kustos/internal/gitops/yamledit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Limits of what is sent to GitHub (titles are capped at 256 characters there, bodies at 65536).
const (
	maxTitle   = 200
	maxBody    = 60000
	maxExcerpt = 500
)

// OptOutAnnotation is the Namespace annotation that turns Kustos off for a namespace.
const OptOutAnnotation = `resizer.io/enabled: "false"`

var markerRE = regexp.MustCompile(`<!-- kustos:key=(\S+) -->`)

// Marker is the hidden, machine-readable line in every PR body that names the Change key.
func Marker(key lifecycle.Key) string { return "<!-- kustos:key=" + string(key) + " -->" }

// MarkerKey returns the key named by a PR body's marker.
func MarkerKey(body string) (lifecycle.Key, bool) {
	m := markerRE.FindStringSubmatch(body)
	if m == nil {
		return "", false
	}
	return lifecycle.Key(m[1]), true
}

// refComponent makes s a safe component of a Git ref name: lower-case letters, digits, '.',
// '_' and '-' kept; anything else becomes '-'; no leading '.', no "..", no ".lock" suffix.
func refComponent(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := b.String()
	for strings.Contains(out, "..") {
		out = strings.ReplaceAll(out, "..", ".")
	}
	out = strings.TrimLeft(out, ".")
	out = strings.TrimSuffix(out, ".lock")
	out = strings.TrimRight(out, ".")
	if out == "" {
		out = "_"
	}
	return out
}

// fieldName is how a field is named in titles: a quota's resource name, else the dotted path.
func fieldName(p []string) string {
	if len(p) == 3 && p[0] == "spec" && p[1] == "hard" {
		return p[2]
	}
	return strings.Join(p, ".")
}

// verb compares old and new as Kubernetes quantities when both are.
func verb(old, next string) string {
	a, err1 := resource.ParseQuantity(old)
	b, err2 := resource.ParseQuantity(next)
	if err1 != nil || err2 != nil {
		return "set"
	}
	switch a.Cmp(b) {
	case -1:
		return "raise"
	case 1:
		return "lower"
	}
	return "set"
}

// Summary is the title's description of what the edit does, e.g.
// "raise requests.cpu 10 → 12, requests.memory 20Gi → 24Gi".
func Summary(c lifecycle.Change, ed *yamledit.Result) string {
	switch {
	case ed.Deleted:
		return "delete " + c.Target.Kind + " " + c.Target.Name
	case c.Edit.Op == lifecycle.EditScaleToZero:
		if len(ed.Fields) == 1 && ed.Fields[0].Old != "" {
			return "scale to zero (replicas " + ed.Fields[0].Old + " → 0)"
		}
		return "scale to zero"
	}
	verbs := map[string]bool{}
	parts := make([]string, 0, len(ed.Fields))
	for _, f := range ed.Fields {
		if f.Created || f.Old == "" {
			verbs["set"] = true
			parts = append(parts, fieldName(f.Path)+" to "+f.New)
			continue
		}
		verbs[verb(f.Old, f.New)] = true
		parts = append(parts, fieldName(f.Path)+" "+f.Old+" → "+f.New)
	}
	if c.Verb != "" {
		// The fields as they change, without the quantity's verb: "resume (replicas 0 → 3)".
		for i, f := range ed.Fields {
			if !f.Created && f.Old != "" && len(f.Path) == 2 && f.Path[0] == "spec" && f.Path[1] == "replicas" {
				parts[i] = "replicas " + f.Old + " → " + f.New
			}
		}
		return c.Verb + " (" + strings.Join(parts, ", ") + ")"
	}
	v := "set"
	if len(verbs) == 1 {
		for k := range verbs {
			v = k
		}
	}
	return v + " " + strings.Join(parts, ", ")
}

func scope(t lifecycle.Target) string {
	if t.Namespace == "" {
		return t.Name
	}
	return t.Namespace + "/" + t.Name
}

// Title is "<detector>(<namespace>/<name>): <summary>", e.g.
// "quota(team-a/compute): raise requests.cpu 10 → 12".
func Title(c lifecycle.Change, ed *yamledit.Result) string {
	return truncate(c.Detector+"("+scope(c.Target)+"): "+Summary(c, ed), maxTitle)
}

// CommitMessage is the title, the detector's summary and the trailers by which Kustos knows its own commit
// (IsOwnCommit): the key, and the tree the commit is written with.
func CommitMessage(c lifecycle.Change, title, tree string) string {
	var b strings.Builder
	b.WriteString(title)
	if c.Summary != "" {
		b.WriteString("\n\n" + truncate(c.Summary, 2000))
	}
	b.WriteString("\n\n" + TrailerKey + ": " + string(c.Key))
	b.WriteString("\n" + TrailerTree + ": " + tree)
	return b.String()
}

// Body renders the PR description: what and why, the evidence, the deficit if any, how to opt
// out, and the hidden key marker. It is a pure function of its inputs, so an unchanged Change
// never edits the PR.
//
// also lists the other files the commit changes (the kustomizations a deleted file is taken out
// of), so a reviewer sees every file the PR touches.
func Body(c lifecycle.Change, ed *yamledit.Result, loc index.Location, cluster string, also ...string) string {
	var b strings.Builder
	b.WriteString(Marker(c.Key) + "\n")
	fmt.Fprintf(&b, "Kustos proposes to **%s** of %s `%s`", md(Summary(c, ed)), md(c.Target.Kind), code(scope(c.Target)))
	if cluster != "" {
		fmt.Fprintf(&b, " in cluster `%s`", code(cluster))
	}
	b.WriteString(".\n\n")

	b.WriteString("### What\n\n")
	verb := "Edits"
	if ed.Deleted {
		verb = "Removes the object from"
		if len(yamledit.Documents(ed.Out)) == 0 {
			verb = "Deletes"
		}
	}
	fmt.Fprintf(&b, "%s `%s` (document %d", verb, code(loc.Path), loc.Doc+1)
	if loc.Namespace != "" {
		fmt.Fprintf(&b, ", namespace `%s`", code(loc.Namespace))
	}
	b.WriteString("); comments and formatting are kept.\n\n")
	if len(also) > 0 {
		quoted := make([]string, len(also))
		for i, p := range also {
			quoted[i] = "`" + code(p) + "`"
		}
		fmt.Fprintf(&b, "Also takes the deleted file out of %s.\n\n", strings.Join(quoted, ", "))
	}
	if len(ed.Fields) > 0 {
		b.WriteString("| field | current | proposed |\n|---|---|---|\n")
		for _, f := range ed.Fields {
			old := f.Old
			if f.Created {
				old = "(not set)"
			}
			fmt.Fprintf(&b, "| `%s` | %s | **%s** |\n", code(strings.Join(f.Path, ".")), cell(old), cell(f.New))
		}
		b.WriteString("\n")
	}

	b.WriteString("### Why\n\n")
	if c.Summary != "" {
		b.WriteString(md(c.Summary) + "\n\n")
	}
	if c.Reason != "" {
		fmt.Fprintf(&b, "Reason: `%s` (detector `%s`).\n\n", code(c.Reason), code(c.Detector))
	}
	writeEvidence(&b, c.Evidence, maxChartsPerBody)

	b.WriteString("### Opting out\n\n")
	opt := lifecycle.OptOut{Declined: fmt.Sprintf("Kustos leaves this %s alone until its cooldown has passed and the evidence has grown.", md(c.Target.Kind)),
		Annotation: "resizer.io/enabled", Value: "false"}
	if c.OptOut != nil {
		opt = *c.OptOut
	}
	fmt.Fprintf(&b, "Close this pull request and %s ", md(opt.Declined))
	if c.Target.Namespace != "" {
		fmt.Fprintf(&b, "To stop Kustos for the whole namespace, annotate it:\n\n```sh\nkubectl annotate namespace %s '%s=%s'\n```\n\n(`metadata.annotations` → `%s: %q`.)\n",
			c.Target.Namespace, code(opt.Annotation), code(opt.Value), code(opt.Annotation), opt.Value)
	} else {
		b.WriteString("\n")
	}
	b.WriteString("\n---\n<sub>Opened by Kustos. Do not edit the branch: Kustos rebuilds it when the base branch moves or a newer recommendation arrives.</sub>\n")
	return truncate(b.String(), maxBody)
}

// writeEvidence renders the quota table (resource, used, hard, %, threshold, proposed) when the
// evidence has resources, with the usage window of those that carry one (up to charts charts),
// a key/value table otherwise, each followed by its activity per source when it carries one (an
// inactivity pause or deletion, charted within the same budget), and deficit owners with their
// events.
func writeEvidence(b *strings.Builder, ev []map[string]string, charts int) {
	if len(ev) == 0 {
		return
	}
	quotaStyle := true
	for _, e := range ev {
		if e["resource"] == "" {
			quotaStyle = false
		}
	}
	b.WriteString("#### Evidence\n\n")
	if quotaStyle {
		b.WriteString("| resource | used | hard | % | threshold | proposed | trigger |\n|---|---:|---:|---:|---:|---:|---|\n")
		for _, e := range ev {
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | **%s** | %s |\n", code(e["resource"]), cell(e["used"]), cell(e["current"]),
				cell(percent(e["usedPercent"])), cell(percent(e["thresholdPercent"])), cell(e["recommended"]), cell(e["trigger"]))
		}
		b.WriteString("\n")
		writeWindow(b, ev, charts)
	} else {
		for i, e := range ev {
			if len(ev) > 1 {
				fmt.Fprintf(b, "Finding %d:\n\n", i+1)
			}
			_, withActivity := parseSources(e["sources"])
			keys := make([]string, 0, len(e))
			for k := range e {
				if withActivity && activityKeys[k] {
					// Shown by the activity section below, readably.
					continue
				}
				keys = append(keys, k)
			}
			sort.Strings(keys)
			b.WriteString("| fact | value |\n|---|---|\n")
			for _, k := range keys {
				fmt.Fprintf(b, "| %s | %s |\n", cell(k), cell(e[k]))
			}
			b.WriteString("\n")
			if _, drew := writeActivity(b, e, charts); drew {
				charts--
			}
		}
	}
	for _, e := range ev {
		if e["ownerKind"] == "" && e["event"] == "" {
			continue
		}
		b.WriteString("**Deficit**: ")
		if e["ownerKind"] != "" {
			fmt.Fprintf(b, "%s `%s` cannot create", md(e["ownerKind"]), code(e["ownerName"]))
			if e["missingPods"] != "" {
				fmt.Fprintf(b, " %s pod(s)", md(e["missingPods"]))
			}
			if e["resource"] != "" {
				fmt.Fprintf(b, " for want of `%s`", code(e["resource"]))
			}
		}
		b.WriteString(".\n\n")
		if ev := strings.TrimSpace(e["event"]); ev != "" {
			for _, line := range strings.Split(truncate(ev, maxExcerpt), "\n") {
				b.WriteString("> " + md(line) + "\n")
			}
			b.WriteString("\n")
		}
	}
}

// percent renders "85.25" as "85.3%".
func percent(s string) string {
	if s == "" {
		return ""
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0") + "%"
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "|", `\|`).Replace(s)
	return md(s)
}

// md neutralises HTML in text that came from the cluster (event messages, names): an event
// cannot inject a marker, a comment or a link into the PR.
func md(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(s)
}

// code makes s safe inside a `code span`.
func code(s string) string { return strings.ReplaceAll(s, "`", "'") }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
