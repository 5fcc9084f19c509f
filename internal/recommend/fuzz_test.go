package recommend

import (
	"context"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/detect/quota"
)

// FuzzLoad feeds arbitrary bytes to Load: it must never panic, and it must return either an
// *InputError pointing into the input or objects with positions, never both. The objects then go
// through the decision too, which must not panic on whatever Load accepted. The reader itself is
// fuzzed by manifest's FuzzLoad. The seed corpus is in testdata/fuzz/FuzzLoad; run with
// go test -fuzz FuzzLoad -fuzztime 45s.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: n}\nstatus: {hard: {cpu: \"1\"}, used: {cpu: 900m}}\n"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: n, annotations: {resizer.io/threshold: \"5\"}}}\n"))
	opt := Options{
		Defaults: quota.Settings{Threshold: big.NewRat(80, 1), Increment: big.NewRat(1, 5)},
		Cooldown: time.Hour,
		Now:      time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC),
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Load("fuzz.yaml", data)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error is %T, want *InputError: %v", err, err)
			}
			if objs != nil {
				t.Fatalf("objects returned with an error")
			}
			// Every line but the last ends in at least one byte (manifest's FuzzLoad checks the
			// exact bound).
			if ie.File != "fuzz.yaml" || ie.Msg == "" || ie.Line < 0 || ie.Line > len(data)+1 {
				t.Fatalf("bad error position or text: %#v (input has %d bytes)", ie, len(data))
			}
			return
		}
		for _, o := range objs {
			if o.Object == nil || o.File != "fuzz.yaml" || o.Line < 1 {
				t.Fatalf("bad object: %#v", o)
			}
		}
		Recommend(context.Background(), objs, opt)
	})
}
