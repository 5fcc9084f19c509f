package extension

import (
	"net/http"
	"strings"
	"testing"
)

// TestOwnerExtendedEvent: an extension through a link is an OwnerExtended Event on the
// environment (the audit of `kustos status` counts them), once per link; a refused one is none.
func TestOwnerExtendedEvent(t *testing.T) {
	h := newHarness(t)
	sink := &eventSink{}
	h.srv.Reporter, h.srv.Mapper = sink, mapper{}
	ls := h.links()
	if code, body := h.do(http.MethodPost, ls["3d"]); code != http.StatusOK {
		t.Fatalf("POST: %d\n%s", code, body)
	}
	if code, _ := h.do(http.MethodPost, ls["3d"]); code != http.StatusConflict {
		t.Fatalf("POST again: %d", code)
	}
	if len(sink.got) != 1 {
		t.Fatalf("events: %+v, want one", sink.got)
	}
	ev := sink.got[0]
	if ev.reason != ReasonOwnerExtended || ev.typ != "Normal" || ev.ref.Kind != "Deployment" || ev.ref.APIVersion != "apps/v1" ||
		ev.ref.Namespace != "team-a" || ev.ref.Name != "preview" || !strings.Contains(ev.msg, "2026-11-29T12:00:00Z") ||
		!strings.HasPrefix(ev.id, "owner-extended|"+string(key)+"|") || strings.Contains(ev.msg+ev.id, "token") {
		t.Errorf("event: %+v", ev)
	}
}
