package lifecycle

import (
	"fmt"
	"net/mail"
	"strings"
	"time"
)

// Notice is a message to a person about a Key: an owner warned that an environment expires, or
// told that it was removed. A detector attaches it to a Finding; the pipeline writes the
// Finding's Event and then hands the Notice to the configured notifier (mail, webhook), before
// it records that the message went out, so a crash re-sends it at most once. The Event never
// carries the Notice's links: they are credentials.
type Notice struct {
	// ID is the same for every attempt at one message (a mail's Message-ID is derived from it):
	// a message sent twice after a crash is recognisable as one.
	ID string `json:"id"`
	// Kind says what the message is: expiry.warning, expiry.done.
	Kind string `json:"kind"`
	// To is the owner's email address ("" when only a webhook is configured).
	To      string `json:"to,omitempty"`
	Owner   string `json:"owner,omitempty"`
	Subject string `json:"subject"`
	// Text is the message in one paragraph, as the Event says it.
	Text   string `json:"text"`
	Target Target `json:"target"`
	// Deadline is the environment's deadline; At when the action happens (or happened).
	Deadline time.Time `json:"deadline,omitzero"`
	At       time.Time `json:"at,omitzero"`
	// Links are the actions offered (extend by 3d …). Secret: never logged, never in an Event.
	Links []NoticeLink `json:"links,omitempty"`
	// OwnerPage links to the owner's page on the extension server: all of the owner's
	// environments, each with its extension buttons (nil without the server, or for a notice
	// to nobody's environment). Secret like Links: whoever holds it sees the owner's page.
	OwnerPage *NoticeLink `json:"ownerPage,omitempty"`
}

// NoticeLink is one action offered in a Notice.
type NoticeLink struct {
	Label string `json:"label"`
	URL   string `json:"url"`
	// Expires is when the link stops working (zero: not said).
	Expires time.Time `json:"expires,omitzero"`
}

// ReasonInvalidOwner is the Warning Event of a target whose owner resolves to an address outside
// --owner-domains: Kustos mails nobody there, and treats the target as having no owner.
const ReasonInvalidOwner = "InvalidOwner"

// ResolveOwner is the email address of an owner (kustos.io/owner, for the expiry and
// inactivity detectors' notices): itself when it is an address, its entry in
// owners otherwise.
func ResolveOwner(owner string, owners map[string]string) (string, error) {
	if strings.Contains(owner, "@") {
		a, err := mail.ParseAddress(owner)
		if err != nil {
			return "", fmt.Errorf("not an email address: %w", err)
		}
		return a.Address, nil
	}
	if addr, ok := owners[owner]; ok {
		return addr, nil
	}
	return "", fmt.Errorf("no email address for owner %q in the owners file", owner)
}
