package quota

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
)

// Messages kube-apiserver 1.36 wrote into FailedCreate events.
const (
	msgReplicaSet  = `Error creating: pods "web-59df5cf7b9-g5w8x" is forbidden: exceeded quota: compute, requested: requests.cpu=4, used: requests.cpu=8, limited: requests.cpu=10`
	msgCombined    = `(combined from similar events): Error creating: pods "api-fc77f4f65-b5bxq" is forbidden: exceeded quota: compute, requested: limits.memory=768Mi,requests.cpu=800m, used: limits.memory=768Mi,requests.cpu=800m, limited: limits.memory=1Gi,requests.cpu=1`
	msgStatefulSet = `create Pod db-1 in StatefulSet db failed error: pods "db-1" is forbidden: exceeded quota: compute, requested: requests.cpu=2, used: requests.cpu=2, limited: requests.cpu=3`
	msgMissingSpec = `failed quota: compute: must specify limits.cpu for: c`
)

// evList builds a ResourceList from "name=quantity" pairs.
func evList(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for _, p := range pairs {
		name, value, _ := strings.Cut(p, "=")
		l[corev1.ResourceName(name)] = resource.MustParse(value)
	}
	return l
}

func TestParseEventMessage(t *testing.T) {
	tests := []struct {
		name    string
		msg     string
		want    QuotaFailure
		wantErr string // substring; "" for success
		notMsg  bool   // want ErrNotQuotaMessage
	}{
		{
			name: "replica set",
			msg:  msgReplicaSet,
			want: QuotaFailure{Kind: FailureExceeded, Quota: "compute",
				Requested: evList("requests.cpu=4"), Used: evList("requests.cpu=8"), Limited: evList("requests.cpu=10")},
		},
		{
			name: "combined from similar events, two resources",
			msg:  msgCombined,
			want: QuotaFailure{Kind: FailureExceeded, Quota: "compute",
				Requested: evList("limits.memory=768Mi", "requests.cpu=800m"),
				Used:      evList("limits.memory=768Mi", "requests.cpu=800m"),
				Limited:   evList("limits.memory=1Gi", "requests.cpu=1")},
		},
		{
			name: "stateful set",
			msg:  msgStatefulSet,
			want: QuotaFailure{Kind: FailureExceeded, Quota: "compute",
				Requested: evList("requests.cpu=2"), Used: evList("requests.cpu=2"), Limited: evList("requests.cpu=3")},
		},
		{
			name: "resource names with dots, slashes and dashes",
			msg:  `Error creating: pods "x" is forbidden: exceeded quota: gpu-quota.v2, requested: count/pods=1,requests.hugepages-2Mi=4Mi,requests.nvidia.com/gpu=1, used: count/pods=9,requests.hugepages-2Mi=0,requests.nvidia.com/gpu=4, limited: count/pods=10,requests.hugepages-2Mi=1Gi,requests.nvidia.com/gpu=4`,
			want: QuotaFailure{Kind: FailureExceeded, Quota: "gpu-quota.v2",
				Requested: evList("count/pods=1", "requests.hugepages-2Mi=4Mi", "requests.nvidia.com/gpu=1"),
				Used:      evList("count/pods=9", "requests.hugepages-2Mi=0", "requests.nvidia.com/gpu=4"),
				Limited:   evList("count/pods=10", "requests.hugepages-2Mi=1Gi", "requests.nvidia.com/gpu=4")},
		},
		{
			name: "storage class resources and exponent quantities",
			msg:  `exceeded quota: storage, requested: gold.storageclass.storage.k8s.io/requests.storage=1e3, used: gold.storageclass.storage.k8s.io/requests.storage=5k, limited: gold.storageclass.storage.k8s.io/requests.storage=5500`,
			want: QuotaFailure{Kind: FailureExceeded, Quota: "storage",
				Requested: evList("gold.storageclass.storage.k8s.io/requests.storage=1k"),
				Used:      evList("gold.storageclass.storage.k8s.io/requests.storage=5k"),
				Limited:   evList("gold.storageclass.storage.k8s.io/requests.storage=5500")},
		},
		{
			name: "trailing newline",
			msg:  msgStatefulSet + "\n",
			want: QuotaFailure{Kind: FailureExceeded, Quota: "compute",
				Requested: evList("requests.cpu=2"), Used: evList("requests.cpu=2"), Limited: evList("requests.cpu=3")},
		},
		{
			name: "empty lists",
			msg:  `exceeded quota: compute, requested: , used: , limited: `,
			want: QuotaFailure{Kind: FailureExceeded, Quota: "compute",
				Requested: corev1.ResourceList{}, Used: corev1.ResourceList{}, Limited: corev1.ResourceList{}},
		},
		{
			name: "missing spec",
			msg:  msgMissingSpec,
			want: QuotaFailure{Kind: FailureMissingSpec, Quota: "compute", Missing: "limits.cpu for: c"},
		},
		{
			name: "missing spec, several resources",
			msg:  `failed quota: compute: must specify limits.cpu,limits.memory`,
			want: QuotaFailure{Kind: FailureMissingSpec, Quota: "compute", Missing: "limits.cpu,limits.memory"},
		},
		{
			name: "missing spec, several containers",
			msg:  `failed quota: compute: must specify limits.cpu for: c; limits.memory for: c,d`,
			want: QuotaFailure{Kind: FailureMissingSpec, Quota: "compute", Missing: "limits.cpu for: c; limits.memory for: c,d"},
		},
		{
			name: "missing spec after the forbidden prefix",
			msg:  `Error creating: pods "web-59df5cf7b9-g5w8x" is forbidden: failed quota: compute: must specify limits.cpu for: c  `,
			want: QuotaFailure{Kind: FailureMissingSpec, Quota: "compute", Missing: "limits.cpu for: c"},
		},
		{
			name: "the first marker wins",
			msg:  `failed quota: a: must specify limits.cpu for: exceeded quota: b, requested: x=1, used: x=1, limited: x=1`,
			want: QuotaFailure{Kind: FailureMissingSpec, Quota: "a", Missing: "limits.cpu for: exceeded quota: b, requested: x=1, used: x=1, limited: x=1"},
		},

		// Not about quotas.
		{name: "empty", msg: "", notMsg: true},
		{name: "other forbidden", msg: `Error creating: pods "x" is forbidden: error looking up service account default/x: serviceaccount "x" not found`, notMsg: true},
		{name: "status unknown", msg: `Error creating: pods "x" is forbidden: status unknown for quota: compute, resources: requests.cpu`, notMsg: true},
		{name: "marker without colon", msg: `exceeded quota compute`, notMsg: true},
		{name: "case matters", msg: `Exceeded Quota: compute, requested: a=1, used: a=1, limited: a=1`, notMsg: true},

		// Malformed.
		{name: "no requested", msg: `exceeded quota: compute`, wantErr: `exceeded quota message: missing ", requested:" section`},
		{name: "no used", msg: `exceeded quota: compute, requested: requests.cpu=1`, wantErr: `exceeded quota message: missing ", used:" section`},
		{name: "no limited", msg: `exceeded quota: compute, requested: requests.cpu=1, used: requests.cpu=1`, wantErr: `exceeded quota message: missing ", limited:" section`},
		{name: "sections out of order", msg: `exceeded quota: compute, used: requests.cpu=1, requested: requests.cpu=1, limited: requests.cpu=1`, wantErr: `missing ", used:" section`},
		{name: "bad quantity", msg: `exceeded quota: compute, requested: requests.cpu=1, used: requests.cpu=abc, limited: requests.cpu=10`,
			wantErr: `exceeded quota message: "used" list: requests.cpu="abc": quantities must match the regular expression`},
		{name: "bad suffix", msg: `exceeded quota: compute, requested: requests.cpu=1, used: requests.cpu=1, limited: requests.cpu=10X`,
			wantErr: `exceeded quota message: "limited" list: requests.cpu="10X": `},
		{name: "negative quantity", msg: `exceeded quota: compute, requested: requests.cpu=-1, used: requests.cpu=1, limited: requests.cpu=1`,
			wantErr: `"requested" list: requests.cpu="-1": negative quantity`},
		{name: "empty quantity", msg: `exceeded quota: compute, requested: requests.cpu=, used: requests.cpu=1, limited: requests.cpu=1`,
			wantErr: `"requested" list: requests.cpu="": quantities must match`},
		{name: "huge exponent", msg: `exceeded quota: compute, requested: requests.cpu=1e-2000000000, used: requests.cpu=1, limited: requests.cpu=1`,
			wantErr: `"requested" list: requests.cpu="1e-2000000000": exponent beyond ±100`},
		{name: "no equals", msg: `exceeded quota: compute, requested: requests.cpu, used: requests.cpu=1, limited: requests.cpu=1`,
			wantErr: `"requested" list: entry "requests.cpu" is not name=quantity`},
		{name: "trailing comma", msg: `exceeded quota: compute, requested: requests.cpu=1,, used: requests.cpu=1, limited: requests.cpu=1`,
			wantErr: `"requested" list: entry "" is not name=quantity`},
		{name: "empty resource name", msg: `exceeded quota: compute, requested: =1, used: requests.cpu=1, limited: requests.cpu=1`,
			wantErr: `"requested" list: "" is not a valid resource name`},
		{name: "bad resource name", msg: `exceeded quota: compute, requested: requests cpu=1, used: requests.cpu=1, limited: requests.cpu=1`,
			wantErr: `"requested" list: "requests cpu" is not a valid resource name`},
		{name: "duplicate resource", msg: `exceeded quota: compute, requested: requests.cpu=1,requests.cpu=2, used: requests.cpu=1, limited: requests.cpu=1`,
			wantErr: `"requested" list: duplicate resource requests.cpu`},
		{name: "trailing text", msg: msgReplicaSet + ` (retrying)`,
			wantErr: `"limited" list: requests.cpu="10 (retrying)"`},
		{name: "empty quota name", msg: `exceeded quota: , requested: requests.cpu=1, used: requests.cpu=1, limited: requests.cpu=1`,
			wantErr: `exceeded quota message: empty quota name`},
		{name: "invalid quota name", msg: `exceeded quota: Compute!, requested: requests.cpu=1, used: requests.cpu=1, limited: requests.cpu=1`,
			wantErr: `exceeded quota message: quota name "Compute!" is not a valid object name`},
		{name: "failed quota without colon", msg: `failed quota: compute`, wantErr: `failed quota message: missing ":" after the quota name`},
		{name: "failed quota, empty name", msg: `failed quota: : must specify limits.cpu`, wantErr: `failed quota message: empty quota name`},
		{name: "failed quota, other reason", msg: `failed quota: compute: something else`, wantErr: `failed quota message: expected "must specify", got "something else"`},
		{name: "failed quota, nothing specified", msg: `failed quota: compute: must specify `, wantErr: `failed quota message: nothing after "must specify"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEventMessage(tt.msg)
			switch {
			case tt.notMsg:
				if !errors.Is(err, ErrNotQuotaMessage) {
					t.Fatalf("err = %v, want ErrNotQuotaMessage", err)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				if errors.Is(err, ErrNotQuotaMessage) {
					t.Fatalf("malformed quota message reported as not a quota message")
				}
			default:
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if diff := diffFailure(got, tt.want); diff != "" {
					t.Fatal(diff)
				}
			}
			if err != nil && (got.Kind != 0 || got.Quota != "") {
				t.Fatalf("got %+v with error", got)
			}
		})
	}
}

func TestParseEventMessageWrapsQuantityErrors(t *testing.T) {
	_, err := ParseEventMessage(`exceeded quota: compute, requested: requests.cpu=1, used: requests.cpu=abc, limited: requests.cpu=10`)
	if !errors.Is(err, resource.ErrFormatWrong) {
		t.Fatalf("err = %v, want it to wrap resource.ErrFormatWrong", err)
	}
}

// TestParseEventMessageHostile checks that huge inputs are handled in linear time and that
// errors quote only a short excerpt of them.
func TestParseEventMessageHostile(t *testing.T) {
	const mib = 1 << 20
	entries := make([]string, 0, mib/16/3)
	for i := 0; len(entries)*16*3 < mib; i++ { // three lists of 1/3 MiB
		entries = append(entries, fmt.Sprintf("r%07d.io/x=1", i))
	}
	bigList := strings.Join(entries, ",")
	tests := []struct {
		name    string
		msg     string
		wantErr string // "" for success
	}{
		{"junk", strings.Repeat("x", mib), ErrNotQuotaMessage.Error()},
		{"markers only", strings.Repeat("exceeded quota:", mib/15), `missing ", requested:" section`},
		{"failed markers only", strings.Repeat("failed quota:", mib/13), `quota name`},
		{"half markers", strings.Repeat("exceeded quota", mib/14) + strings.Repeat("failed quot", mib/11), ErrNotQuotaMessage.Error()},
		{"long quota name", "exceeded quota: " + strings.Repeat("a", mib) + ", requested: a=1, used: a=1, limited: a=1", `quota name "aaaa`},
		{"long resource name", "exceeded quota: q, requested: " + strings.Repeat("a", mib) + "=1, used: a=1, limited: a=1", `is not a valid resource name`},
		{"long quantity", "exceeded quota: q, requested: a=" + strings.Repeat("9", mib) + ", used: a=1, limited: a=1", `quantity longer than 64 characters`},
		{"long entry", "exceeded quota: q, requested: " + strings.Repeat("a", mib) + ", used: a=1, limited: a=1", `is not name=quantity`},
		{"many separators", "exceeded quota: q, requested: " + strings.Repeat(",", mib) + ", used: a=1, limited: a=1", `is not name=quantity`},
		{"long missing spec", "failed quota: q: " + strings.Repeat("z", mib), `expected "must specify"`},
		{"many entries", "exceeded quota: q, requested: " + bigList + ", used: " + bigList + ", limited: " + bigList, ""},
		{"many entries, last bad", "exceeded quota: q, requested: " + bigList + ",x=y, used: a=1, limited: a=1", `x="y"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := ParseEventMessage(tt.msg)
			elapsed := time.Since(start)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %.300v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %.300v, want it to contain %q", err, tt.wantErr)
			}
			if err != nil && len(err.Error()) > 400 {
				t.Fatalf("error is %d bytes long: %.300s…", len(err.Error()), err)
			}
			// Linear work on 1-2 MiB takes at most a second, even under -race on a busy machine;
			// quadratic work would take hours. The bound only has to tell the two apart.
			if elapsed > 30*time.Second {
				t.Fatalf("took %v", elapsed)
			}
			t.Logf("%d bytes in %v", len(tt.msg), elapsed)
		})
	}
}

func TestEvExponentOK(t *testing.T) {
	tests := map[string]bool{
		"1": true, "1e3": true, "1E3": true, "1e-9": true, "1e+100": true, "1e100": true, "1e-100": true,
		"1e0000000000000000100": true, "1E": true, "1Ei": true, "5e": true, "1ee5": true,
		"1e101": false, "1e-101": false, "1e-2000000000": false, "1E4294967296": false, "1e+0000000000001000": false,
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			if got := evExponentOK(in); got != want {
				t.Fatalf("evExponentOK(%q) = %v, want %v", in, got, want)
			}
		})
	}
}

func diffFailure(got, want QuotaFailure) string {
	if got.Kind != want.Kind || got.Quota != want.Quota || got.Missing != want.Missing {
		return fmt.Sprintf("got %+v,\nwant %+v", got, want)
	}
	for _, l := range []struct {
		what      string
		got, want corev1.ResourceList
	}{{"Requested", got.Requested, want.Requested}, {"Used", got.Used, want.Used}, {"Limited", got.Limited, want.Limited}} {
		if (l.got == nil) != (l.want == nil) || len(l.got) != len(l.want) {
			return fmt.Sprintf("%s = %v, want %v", l.what, l.got, l.want)
		}
		for name, q := range l.want {
			if g, ok := l.got[name]; !ok || g.Cmp(q) != 0 {
				return fmt.Sprintf("%s[%s] = %s, want %s", l.what, name, g.String(), q.String())
			}
		}
	}
	return ""
}

// prettyPrintList formats a list the way the API server does (sorted name=quantity).
func prettyPrintList(l corev1.ResourceList) string {
	parts := make([]string, 0, len(l))
	for name, q := range l {
		parts = append(parts, string(name)+"="+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// FuzzParseEventMessage: no panics; short errors; ErrNotQuotaMessage exactly when no marker
// is present; parsed results are valid and survive being printed the way the API server
// prints them and parsed again.
func FuzzParseEventMessage(f *testing.F) {
	for _, s := range []string{
		msgReplicaSet, msgCombined, msgStatefulSet, msgMissingSpec,
		`failed quota: compute: must specify limits.cpu,limits.memory`,
		`failed quota: compute: must specify limits.cpu for: c; limits.memory for: c,d`,
		`Error creating: pods "x" is forbidden: failed quota: compute: must specify limits.cpu for: c`,
		`exceeded quota: q, requested: count/pods=1,requests.nvidia.com/gpu=1,requests.hugepages-2Mi=2Mi, used: count/pods=1, limited: count/pods=1`,
		`exceeded quota: compute, requested: requests.cpu=1, used: requests.cpu=abc, limited: requests.cpu=10`,
		`exceeded quota: compute, requested: , used: , limited: `,
		`exceeded quota: q, requested: a=1e-2000000000, used: a=1, limited: a=1`,
		`status unknown for quota: compute, resources: requests.cpu`,
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		got, err := ParseEventMessage(msg)
		hasMarker := strings.Contains(msg, evExceededMarker) || strings.Contains(msg, evFailedMarker)
		if errors.Is(err, ErrNotQuotaMessage) == hasMarker {
			t.Fatalf("ParseEventMessage(%q): err = %v, but marker present = %v", msg, err, hasMarker)
		}
		if err != nil {
			if len(err.Error()) > 400 {
				t.Fatalf("error of %d bytes: %s", len(err.Error()), err)
			}
			if got.Kind != 0 || got.Quota != "" || got.Missing != "" || got.Requested != nil {
				t.Fatalf("result %+v with error %v", got, err)
			}
			return
		}
		if len(content.IsDNS1123Subdomain(got.Quota)) != 0 {
			t.Fatalf("invalid quota name %q", got.Quota)
		}
		var again string
		switch got.Kind {
		case FailureExceeded:
			for _, l := range []corev1.ResourceList{got.Requested, got.Used, got.Limited} {
				if l == nil {
					t.Fatalf("nil list in %+v", got)
				}
				for name, q := range l {
					if len(content.IsLabelKey(string(name))) != 0 || q.Sign() < 0 {
						t.Fatalf("bad entry %s=%s", name, q.String())
					}
					if len(q.String()) > evMaxQuantity {
						return // canonical form of a 60-digit quantity can be longer than the input
					}
					// Quantity.String() is lossy for decimal values ≥ 10^21 (there is no SI
					// suffix beyond E: 1e21 prints as "1"), so the API server could not have
					// written such a message.
					if back, err := resource.ParseQuantity(q.String()); err != nil || back.Cmp(q) != 0 {
						return
					}
				}
			}
			if got.Missing != "" {
				t.Fatalf("Missing set for an exceeded quota: %+v", got)
			}
			again = fmt.Sprintf("exceeded quota: %s, requested: %s, used: %s, limited: %s", got.Quota,
				prettyPrintList(got.Requested), prettyPrintList(got.Used), prettyPrintList(got.Limited))
		case FailureMissingSpec:
			if got.Missing == "" || strings.TrimSpace(got.Missing) != got.Missing {
				t.Fatalf("Missing %q not trimmed or empty", got.Missing)
			}
			if got.Requested != nil || got.Used != nil || got.Limited != nil {
				t.Fatalf("lists set for a missing spec: %+v", got)
			}
			again = fmt.Sprintf("failed quota: %s: must specify %s", got.Quota, got.Missing)
		default:
			t.Fatalf("Kind = %d", got.Kind)
		}
		back, err := ParseEventMessage(again)
		if err != nil {
			t.Fatalf("re-printed message %q does not parse: %v", again, err)
		}
		if diff := diffFailure(back, got); diff != "" {
			t.Fatalf("re-printed message %q parses differently: %s", again, diff)
		}
	})
}
