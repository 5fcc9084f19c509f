package lifecycle

import (
	"encoding/json"
	"fmt"
	"net/url"
)

// MaxCloudEventData bounds the JSON data of a CloudEvent Change. The Change is stored in its
// Key's Lease as the pending decision (an annotation; a Lease's annotations hold 256 KiB in
// all), so a Cleaner that lists many deleted objects must not make it unwritable.
const MaxCloudEventData = 64 << 10

// CloudEvent is what an EditSendCloudEvent sends: its sink (a tenant's URL, which may hold
// credentials in its userinfo: never put it in a message, use SinkForDisplay), its id (stable
// for one cleanup, so that a repeat after a crash is recognisable), its subject and its data,
// already encoded as JSON so that the Change stays JSON and replays byte for byte.
type CloudEvent struct {
	Sink    string          `json:"sink"`
	ID      string          `json:"id"`
	Subject string          `json:"subject"`
	Data    json.RawMessage `json:"data"`
}

// NewCloudEvent encodes data and checks the event's size: an error when the data is larger than
// MaxCloudEventData or cannot be encoded, or when sink, id or subject is empty.
func NewCloudEvent(sink, id, subject string, data any) (*CloudEvent, error) {
	if sink == "" || id == "" || subject == "" {
		return nil, fmt.Errorf("%w: a CloudEvent needs a sink, an id and a subject", ErrInvalidChange)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("encoding the data of CloudEvent %q: %w", id, err)
	}
	if len(b) > MaxCloudEventData {
		return nil, fmt.Errorf("%w: the data of CloudEvent %q is %d bytes, more than the %d a Change may carry",
			ErrInvalidChange, id, len(b), MaxCloudEventData)
	}
	return &CloudEvent{Sink: sink, ID: id, Subject: subject, Data: b}, nil
}

// SinkForDisplay is the sink without its userinfo, for Events, logs and evidence; a sink that
// is not a URL shows as "(not a URL)".
func (e CloudEvent) SinkForDisplay() string {
	u, err := url.Parse(e.Sink)
	if err != nil {
		return "(not a URL)"
	}
	u.User = nil
	return u.String()
}
