package observe

import (
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestEventName(t *testing.T) {
	a := EventName("compute", "quota/team-a/compute|2026-11-21T12:00:00Z|spec.hard.requests.cpu|12")
	b := EventName("compute", "quota/team-a/compute|2026-11-21T13:00:00Z|spec.hard.requests.cpu|12")
	if a == b {
		t.Errorf("different decisions share the event name %s", a)
	}
	if a != EventName("compute", "quota/team-a/compute|2026-11-21T12:00:00Z|spec.hard.requests.cpu|12") {
		t.Error("the same decision must give the same event name")
	}
	if !strings.HasPrefix(a, "compute.") {
		t.Errorf("event name %s does not start with the object name", a)
	}
	long := EventName(strings.Repeat("x", 300), "id")
	if errs := validation.IsDNS1123Subdomain(long); len(errs) > 0 {
		t.Errorf("long event name invalid: %v", errs)
	}
}

func TestTruncateKeepsUTF8(t *testing.T) {
	s := strings.Repeat("≥", 500)
	got := truncate(s, 1024)
	if len(got) > 1024 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("truncate gave %d bytes, valid=%v", len(got), utf8.ValidString(got))
	}
	if truncate("short", 1024) != "short" {
		t.Error("short strings must stay as they are")
	}
}
