package main

import (
	"strings"
	"testing"
)

// TestDropSeries: the partial fault takes the left-out labs' series out of Prometheus's answer
// and says so in a warning, as Thanos does; the silent broken mode adds no warning; an answer
// it cannot read is refused, so the proxy passes it on as it came.
func TestDropSeries(t *testing.T) {
	vector := `{"status":"success","data":{"resultType":"vector","result":[` +
		`{"metric":{"namespace":"lab-a","name":"vm-001"},"value":[1,"1764410000"]},` +
		`{"metric":{"namespace":"lab-b","name":"vm-002"},"value":[1,"1764410001"]},` +
		`{"metric":{},"value":[1,"3"]}]}}`
	leave := map[string]bool{"lab-a/vm-001": true}
	for _, tc := range []struct {
		name, body string
		warn       bool
		dropped    int
		want, not  []string
		err        bool
	}{
		{name: "a lab left out, with a warning", body: vector, warn: true, dropped: 1,
			want: []string{`"lab-b"`, `"warnings":["partial response: store`, `"value":[1,"3"]`}, not: []string{`"vm-001"`}},
		{name: "left out silently", body: vector, dropped: 1, not: []string{`"vm-001"`, "warnings"}},
		{name: "Prometheus's own warning kept", warn: true, body: strings.Replace(vector, `}}`, `},"warnings":["theirs"]}`, 1),
			dropped: 1, want: []string{`"warnings":["theirs","partial response`}},
		{name: "a scalar answer: kept, with the warning", body: `{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}`, warn: true,
			want: []string{`"result":[1,"2"]`, `"warnings":["partial`}},
		{name: "a string answer", body: `{"status":"success","data":{"resultType":"string","result":"x"}}`, warn: true, err: true},
		{name: "not JSON", body: `<html>`, warn: true, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, dropped, err := dropSeries([]byte(tc.body), leave, tc.warn)
			if tc.err {
				if err == nil {
					t.Fatalf("no error; got %s", out)
				}
				return
			}
			if err != nil || dropped != tc.dropped {
				t.Fatalf("dropped %d, err %v; want %d", dropped, err, tc.dropped)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("%s lacks %s", out, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(string(out), n) {
					t.Errorf("%s holds %s", out, n)
				}
			}
		})
	}
}
