package extension

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ReasonOwnerExtended is the Event on an environment its owner extended with a link (beside
// OwnerKept and OwnerResumed: what `kustos status` lists as owner actions).
const ReasonOwnerExtended = "OwnerExtended"

// extendedEvent writes the OwnerExtended Event on the environment. The extension is recorded
// already: a failed Event is logged, and the owner still sees the extension done.
func (s *Server) extendedEvent(ctx context.Context, l link, until time.Time) {
	if s.Reporter == nil {
		return
	}
	ref := targetRef(l.key, s.Mapper)
	msg := fmt.Sprintf("extended by its owner for %s, until %s", l.period.Name, until.UTC().Format(time.RFC3339))
	if err := s.Reporter.Notify(ctx, ref, corev1.EventTypeNormal, ReasonOwnerExtended, msg, "owner-extended|"+string(l.key)+"|"+l.claim.ID, s.Now()); err != nil {
		s.Log.Error(err, "writing the OwnerExtended Event", "key", string(l.key))
	}
}
