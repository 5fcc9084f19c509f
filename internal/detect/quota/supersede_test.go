package quota

import (
	"testing"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

func cpuMem(cpu, mem string) lifecycle.Change {
	var c lifecycle.Change
	if cpu != "" {
		c.Edit.Fields = append(c.Edit.Fields, lifecycle.FieldChange{Path: []string{"spec", "hard", "requests.cpu"}, To: cpu})
		c.Evidence = append(c.Evidence, map[string]string{"resource": "requests.cpu", "recommended": cpu})
	}
	if mem != "" {
		c.Edit.Fields = append(c.Edit.Fields, lifecycle.FieldChange{Path: []string{"spec", "hard", "requests.memory"}, To: mem})
		c.Evidence = append(c.Evidence, map[string]string{"resource": "requests.memory", "recommended": mem})
	}
	return c
}

func TestLarger(t *testing.T) {
	cases := []struct {
		name      string
		next, ref lifecycle.Change
		want      bool
	}{
		{"same", cpuMem("12", ""), cpuMem("12", ""), false},
		{"smaller", cpuMem("11", ""), cpuMem("12", ""), false},
		{"same quantity, other spelling", cpuMem("12000m", ""), cpuMem("12", ""), false},
		{"larger", cpuMem("14", ""), cpuMem("12", ""), true},
		{"new resource", cpuMem("12", "24Gi"), cpuMem("12", ""), true},
		{"fewer resources, none larger", cpuMem("12", ""), cpuMem("12", "24Gi"), false},
		{"nothing proposed before", cpuMem("12", ""), lifecycle.Change{}, true},
	}
	for _, tc := range cases {
		if got := larger(tc.next, tc.ref); got != tc.want {
			t.Errorf("%s: larger = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMergeChangesNeverDropsOrLowers(t *testing.T) {
	got := mergeChanges(cpuMem("12", "30Gi"), cpuMem("14", "24Gi"))
	if len(got.Edit.Fields) != 2 || got.Edit.Fields[0].To != "14" || got.Edit.Fields[1].To != "30Gi" {
		t.Fatalf("fields %+v", got.Edit.Fields)
	}
	if got.Evidence[0]["recommended"] != "14" || got.Evidence[1]["recommended"] != "30Gi" {
		t.Fatalf("evidence %+v", got.Evidence)
	}
	got = mergeChanges(cpuMem("", "30Gi"), cpuMem("14", ""))
	if len(got.Edit.Fields) != 2 || got.Edit.Fields[1].To != "30Gi" || len(got.Evidence) != 2 {
		t.Fatalf("a field only the PR had is kept: %+v", got)
	}
}
