package quota

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
)

// ErrNotQuotaMessage is returned by ParseEventMessage for messages that are not about a quota.
var ErrNotQuotaMessage = errors.New("not a quota failure message")

// The markers and separators kube-apiserver's ResourceQuota admission writes
// (k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go):
//
//	exceeded quota: %s, requested: %s, used: %s, limited: %s
//	failed quota: %s: %v   (where %v is the pod evaluator's "must specify …")
//
// Quota names, resource names and quantities contain no spaces, commas or colons, so the
// separators cannot occur inside them and plain substring search is unambiguous.
const (
	evExceededMarker = "exceeded quota:"
	evFailedMarker   = "failed quota:"
	evRequestedSep   = ", requested: "
	evUsedSep        = ", used: "
	evLimitedSep     = ", limited: "
	evMustSpecify    = "must specify"
)

// Bounds on what is looked at and echoed. Real entries are short: a resource name is a
// qualified name (≤ 253+1+63 characters) and a quantity is at most a few dozen characters.
// Capping the quantity also keeps ParseQuantity's big-number conversion, which is quadratic in
// the number of digits, cheap on hostile input.
const (
	evMaxResourceName = 253 + 1 + 63
	evMaxQuotaName    = 253
	evMaxQuantity     = 64
	evMaxEcho         = 40 // characters of input quoted in an error
	// evMaxExponent bounds the exponent of "1e5"-style quantities. ParseQuantity (apimachinery
	// v0.36) runs for minutes on "1e-2000000000", 13 characters, and quantities like
	// "1e2000000000" parse quickly but make arithmetic on them (Cmp, Add) explode. The API server prints canonical quantities, whose
	// exponents are small multiples of 3.
	evMaxExponent = 100
)

// ParseEventMessage parses the quota part of a FailedCreate event message, wherever it
// appears in the message ("Error creating: pods \"x\" is forbidden: exceeded quota: …",
// "(combined from similar events): …", "create Pod db-1 in StatefulSet db failed error: …").
//
// A message with neither "exceeded quota:" nor "failed quota:" returns ErrNotQuotaMessage. A
// message with a marker but a malformed remainder returns an error that says what is wrong,
// quoting at most a short excerpt of the input. The cost is linear in the message length.
func ParseEventMessage(msg string) (QuotaFailure, error) {
	ei := strings.Index(msg, evExceededMarker)
	fi := strings.Index(msg, evFailedMarker)
	switch {
	case ei < 0 && fi < 0:
		return QuotaFailure{}, ErrNotQuotaMessage
	case ei >= 0 && (fi < 0 || ei < fi):
		f, err := parseExceeded(msg[ei+len(evExceededMarker):])
		if err != nil {
			return QuotaFailure{}, fmt.Errorf("exceeded quota message: %w", err)
		}
		return f, nil
	default:
		f, err := parseMissingSpec(msg[fi+len(evFailedMarker):])
		if err != nil {
			return QuotaFailure{}, fmt.Errorf("failed quota message: %w", err)
		}
		return f, nil
	}
}

// parseExceeded parses " <quota>, requested: <list>, used: <list>, limited: <list>".
func parseExceeded(s string) (QuotaFailure, error) {
	name, rest, ok := strings.Cut(s, evRequestedSep)
	if !ok {
		return QuotaFailure{}, errors.New(`missing ", requested:" section`)
	}
	requested, rest, ok := strings.Cut(rest, evUsedSep)
	if !ok {
		return QuotaFailure{}, errors.New(`missing ", used:" section`)
	}
	used, limited, ok := strings.Cut(rest, evLimitedSep)
	if !ok {
		return QuotaFailure{}, errors.New(`missing ", limited:" section`)
	}
	f := QuotaFailure{Kind: FailureExceeded}
	var err error
	if f.Quota, err = parseQuotaName(name); err != nil {
		return QuotaFailure{}, err
	}
	if f.Requested, err = parseResourceList("requested", requested); err != nil {
		return QuotaFailure{}, err
	}
	if f.Used, err = parseResourceList("used", used); err != nil {
		return QuotaFailure{}, err
	}
	// The limited list ends the message; trailing whitespace (a newline) is not part of it.
	if f.Limited, err = parseResourceList("limited", strings.TrimRight(limited, " \t\r\n")); err != nil {
		return QuotaFailure{}, err
	}
	return f, nil
}

// parseMissingSpec parses " <quota>: must specify <what>".
func parseMissingSpec(s string) (QuotaFailure, error) {
	name, rest, ok := strings.Cut(s, ":")
	if !ok {
		return QuotaFailure{}, errors.New(`missing ":" after the quota name`)
	}
	quota, err := parseQuotaName(name)
	if err != nil {
		return QuotaFailure{}, err
	}
	rest = strings.TrimSpace(rest)
	missing, ok := strings.CutPrefix(rest, evMustSpecify)
	if !ok {
		return QuotaFailure{}, fmt.Errorf("expected %q, got %q", evMustSpecify, clipValue(rest, evMaxEcho))
	}
	missing = strings.TrimSpace(missing)
	if missing == "" {
		return QuotaFailure{}, fmt.Errorf("nothing after %q", evMustSpecify)
	}
	return QuotaFailure{Kind: FailureMissingSpec, Quota: quota, Missing: missing}, nil
}

// parseQuotaName checks that s (around spaces) is a valid ResourceQuota name.
func parseQuotaName(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("empty quota name")
	}
	// The length check first: the regular expression would otherwise scan hostile megabytes.
	if len(s) > evMaxQuotaName || len(content.IsDNS1123Subdomain(s)) != 0 {
		return "", fmt.Errorf("quota name %q is not a valid object name", clipValue(s, evMaxEcho))
	}
	return s, nil
}

// parseResourceList parses "name=quantity,name=quantity" as written by the API server's
// prettyPrint. An empty list is an empty, non-nil ResourceList.
func parseResourceList(what, s string) (corev1.ResourceList, error) {
	list := corev1.ResourceList{}
	if s == "" {
		return list, nil
	}
	for {
		entry, rest, more := strings.Cut(s, ",")
		if err := parseResourceEntry(list, entry); err != nil {
			return nil, fmt.Errorf("%q list: %w", what, err)
		}
		if !more {
			return list, nil
		}
		s = rest
	}
}

// parseResourceEntry parses one "name=quantity" into list.
func parseResourceEntry(list corev1.ResourceList, entry string) error {
	name, value, ok := strings.Cut(entry, "=")
	if !ok {
		return fmt.Errorf("entry %q is not name=quantity", clipValue(entry, evMaxEcho))
	}
	if len(name) > evMaxResourceName || len(content.IsLabelKey(name)) != 0 {
		return fmt.Errorf("%q is not a valid resource name", clipValue(name, evMaxEcho))
	}
	// From here on name is a short, valid qualified name; only the value needs quoting.
	shown := clipValue(name, evMaxEcho)
	rn := corev1.ResourceName(name)
	if _, dup := list[rn]; dup {
		return fmt.Errorf("duplicate resource %s", shown)
	}
	if len(value) > evMaxQuantity {
		return fmt.Errorf("%s=%q: quantity longer than %d characters", shown, clipValue(value, evMaxEcho), evMaxQuantity)
	}
	if !evExponentOK(value) {
		return fmt.Errorf("%s=%q: exponent beyond ±%d", shown, clipValue(value, evMaxEcho), evMaxExponent)
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return fmt.Errorf("%s=%q: %w", shown, clipValue(value, evMaxEcho), err)
	}
	if q.Sign() < 0 {
		return fmt.Errorf("%s=%q: negative quantity", shown, clipValue(value, evMaxEcho))
	}
	list[rn] = q
	return nil
}

// evExponentOK reports whether the exponent of a quantity string, if it has one ("5e3",
// "1E-6"; not the suffixes "E" and "Ei"), is within ±evMaxExponent.
func evExponentOK(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	exp := strings.TrimLeft(s[i+1:], "+-")
	n := 0
	for n < len(exp) && exp[n] >= '0' && exp[n] <= '9' {
		n++
	}
	if n == 0 {
		return true // a suffix, not an exponent; ParseQuantity judges the rest
	}
	exp = strings.TrimLeft(exp[:n], "0")
	return len(exp) <= 3 && (exp == "" || atoiSmall(exp) <= evMaxExponent)
}

// atoiSmall converts at most a few decimal digits.
func atoiSmall(s string) int {
	v := 0
	for i := 0; i < len(s); i++ {
		v = v*10 + int(s[i]-'0')
	}
	return v
}
