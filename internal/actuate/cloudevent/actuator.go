package cloudevent

import (
	"context"
	"fmt"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Applier carries out a Change (the pipeline's Actuator); the Actuator hands it every Change
// that is not a CloudEvent.
type Applier interface {
	Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error)
}

// Deliverer sends one CloudEvent (*Sender).
type Deliverer interface {
	Send(ctx context.Context, sink, id, subject string, data any) error
}

// Current tells whether a CloudEvent decided earlier is still the one to send: the pipeline
// replays a pending decision after a failure or a crash, and the Cleaner it announces may have
// changed since (a new generation: a new id, maybe a new sink). Nil when it is; an error
// matching lifecycle.ErrSourceConflict when it is not (the pipeline reports it and forgets the
// decision, and the detector decides afresh); another error when it cannot tell.
type Current interface {
	CurrentCloudEvent(ctx context.Context, c lifecycle.Change) error
}

var (
	_ Applier   = Actuator{}
	_ Deliverer = (*Sender)(nil)
)

// Actuator sends the CloudEvent of a Change whose Edit is an EditSendCloudEvent and hands every
// other Change to Next. It sits first in every chain but observer mode's (where the observe
// actuator reports what would be sent): a CloudEvent is never proposed to Git nor written to the
// cluster.
//
// The pipeline gives delivery its guarantees: the Change is recorded in its Key's Lease before
// Apply is called and stays pending until Apply returns nil, so an event is sent until the sink
// acknowledges it — again after a crash, always with the same id — and never again once it did
// (the detector decides once per id). Send's errors go back as they are: their text is the
// class of the failure, fit for the Cleaner's author (lifecycle.ErrNotDelivered, and
// egress.ErrRefused for a destination this Kustos may not send to), with a Detail method for
// the operator's log.
type Actuator struct {
	Sender Deliverer
	// Current, when set, is asked before each send (a replay may be of an older decision).
	Current Current
	Next    Applier
}

// Apply sends c's CloudEvent, or passes c on. A sent event is not Applied (nothing in the
// cluster changed); the Cleaner's status says it was delivered.
func (a Actuator) Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	if c.Edit.Op != lifecycle.EditSendCloudEvent {
		if a.Next == nil {
			return lifecycle.Outcome{}, fmt.Errorf("%w: %s %s: no actuator for it", lifecycle.ErrInvalidChange, c.Edit.Op, c.Target)
		}
		return a.Next.Apply(ctx, c, decidedAt, opts)
	}
	e := c.Edit.CloudEvent
	if e == nil || e.Sink == "" || e.ID == "" || len(e.Data) > lifecycle.MaxCloudEventData {
		return lifecycle.Outcome{}, fmt.Errorf("%w: %s: a SendCloudEvent needs a sink, an id and at most %d bytes of data",
			lifecycle.ErrInvalidChange, c.Target, lifecycle.MaxCloudEventData)
	}
	if a.Current != nil {
		if err := a.Current.CurrentCloudEvent(ctx, c); err != nil {
			return lifecycle.Outcome{}, err
		}
	}
	if err := a.Sender.Send(ctx, e.Sink, e.ID, e.Subject, e.Data); err != nil {
		return lifecycle.Outcome{}, err
	}
	return lifecycle.Outcome{}, nil
}
