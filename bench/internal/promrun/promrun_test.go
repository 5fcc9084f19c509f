package promrun

import (
	"os"
	"strings"
	"testing"
)

func TestTB(t *testing.T) {
	dir := t.TempDir()
	tb := NewTB(dir, func(string, ...any) {})
	var order []int
	tmp := ""
	err := tb.Guard(func() {
		tmp = tb.TempDir()
		tb.Cleanup(func() { order = append(order, 1) })
		tb.Cleanup(func() { order = append(order, 2) })
		tb.Fatalf("no %s", "prometheus")
		order = append(order, 99) // never reached
	})
	if err == nil || err.Error() != "no prometheus" || !tb.Failed() {
		t.Errorf("guard: %v, failed %v", err, tb.Failed())
	}
	if _, err := os.Stat(tmp); err != nil || !strings.HasPrefix(tmp, dir) {
		t.Errorf("TempDir %q: %v", tmp, err)
	}
	tb.Finish()
	if len(order) != 2 || order[0] != 2 || order[1] != 1 {
		t.Errorf("cleanups ran %v, want the last first", order)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("TempDir not removed: %v", err)
	}
	if err := NewTB(dir, nil).Guard(func() {}); err != nil {
		t.Error(err)
	}
}
