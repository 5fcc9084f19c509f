package quota

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Supersedes is the quota detector's rule for a newer Change of the same quota: it supersedes an
// open (or declined) proposal when it asks for a resource that one lacks or a larger value of
// one, and then the proposal becomes every field at the larger of the two values, so an update
// never drops or lowers what is already proposed.
//
// Shrinks differ: a grow replaces a shrink whole (pods need the room now; the controller closes
// the shrink's pull request first, and this is the rule wherever no pull request is open); a
// shrink never supersedes a grow; and a newer shrink replaces an older one when any value
// differs, the window having moved.
func Supersedes(newer, old lifecycle.Change) (lifecycle.Change, bool) {
	switch newShrink, oldShrink := IsShrink(newer), IsShrink(old); {
	case newShrink && oldShrink:
		if sameFields(newer, old) {
			return old, false
		}
		return newer, true
	case oldShrink:
		return newer, true
	case newShrink:
		return old, false
	}
	if !larger(newer, old) {
		return old, false
	}
	return mergeChanges(old, newer), true
}

func pathKey(p []string) string { return strings.Join(p, ".") }

// greater reports whether quantity a is larger than b (strings that are not quantities: when
// they differ).
func greater(a, b string) bool {
	qa, err1 := resource.ParseQuantity(a)
	qb, err2 := resource.ParseQuantity(b)
	if err1 != nil || err2 != nil {
		return a != b
	}
	return qa.Cmp(qb) > 0
}

// larger reports whether c asks for more than ref: a field ref lacks, or a larger value.
func larger(c, ref lifecycle.Change) bool {
	old := map[string]string{}
	for _, f := range ref.Edit.Fields {
		old[pathKey(f.Path)] = f.To
	}
	for _, f := range c.Edit.Fields {
		v, ok := old[pathKey(f.Path)]
		if !ok || greater(f.To, v) {
			return true
		}
	}
	return false
}

// mergeChanges is next with every field of prev that next lacks or asks less of.
func mergeChanges(prev, next lifecycle.Change) lifecycle.Change {
	out := next
	out.Edit.Fields = nil
	out.Evidence = nil
	evidence := func(c lifecycle.Change, i int) map[string]string {
		if i < len(c.Evidence) {
			return c.Evidence[i]
		}
		return map[string]string{}
	}
	prevAt := map[string]int{}
	for i, f := range prev.Edit.Fields {
		prevAt[pathKey(f.Path)] = i
	}
	seen := map[string]bool{}
	for i, f := range next.Edit.Fields {
		k := pathKey(f.Path)
		seen[k] = true
		if j, ok := prevAt[k]; ok && greater(prev.Edit.Fields[j].To, f.To) {
			out.Edit.Fields = append(out.Edit.Fields, prev.Edit.Fields[j])
			out.Evidence = append(out.Evidence, evidence(prev, j))
			continue
		}
		out.Edit.Fields = append(out.Edit.Fields, f)
		out.Evidence = append(out.Evidence, evidence(next, i))
	}
	for j, f := range prev.Edit.Fields {
		if !seen[pathKey(f.Path)] {
			out.Edit.Fields = append(out.Edit.Fields, f)
			out.Evidence = append(out.Evidence, evidence(prev, j))
		}
	}
	return out
}

// sameFields reports whether a and b set the same fields to the same values.
func sameFields(a, b lifecycle.Change) bool {
	if len(a.Edit.Fields) != len(b.Edit.Fields) {
		return false
	}
	want := map[string]string{}
	for _, f := range b.Edit.Fields {
		want[pathKey(f.Path)] = f.To
	}
	for _, f := range a.Edit.Fields {
		if v, ok := want[pathKey(f.Path)]; !ok || v != f.To {
			return false
		}
	}
	return true
}
