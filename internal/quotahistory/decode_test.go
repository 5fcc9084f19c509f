package quotahistory

import (
	"math"
	"strings"
	"testing"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

func TestDecodeRange(t *testing.T) {
	t.Parallel()
	const series = `{"metric":{"namespace":"a","resourcequota":"q","resource":"requests.cpu","extra":"x"},"values":[[1764405296.123,"0.25"],[1764491696,"NaN"]]}`
	for _, tc := range []struct {
		name     string
		body     string
		series   int
		warnings int
		apiErr   v1.ErrorType
		err      string
	}{
		{name: "matrix", body: `{"status":"success","data":{"resultType":"matrix","result":[` + series + `,` + series + `]}}`, series: 2},
		{name: "warnings after the data, and infos", body: `{"status":"success","data":{"resultType":"matrix","result":[` + series + `]},"warnings":["store down"],"infos":["x"]}`, series: 1, warnings: 1},
		{name: "keys in any order", body: `{"warnings":["w"],"data":{"result":[],"resultType":"matrix"},"status":"success"}`, warnings: 1},
		{name: "Prometheus's error", body: `{"status":"error","errorType":"bad_data","error":"parse error at char 3"}`, apiErr: v1.ErrBadData},
		{name: "not a matrix", body: `{"status":"success","data":{"resultType":"vector","result":[]}}`, err: `"vector" result`},
		{name: "no status", body: `{"data":{"resultType":"matrix","result":[]}}`, err: "status"},
		{name: "broken off", body: `{"status":"success","data":{"resultType":"matrix","result":[` + series[:60], err: "EOF"},
		{name: "a point that is no pair", body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1]]}]}}`, err: "a point is"},
		{name: "a value that is no number", body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}}`, err: "value"},
		{name: "not JSON", body: `<html>`, err: "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := 0
			a, err := decodeRange(strings.NewReader(tc.body), func(s *rangeSeries) {
				n++
				if s.Metric.Namespace != "a" || s.Metric.ResourceQuota != "q" || s.Metric.Resource != "requests.cpu" || len(s.Values) != 2 ||
					s.Values[0] != (point{T: 1764405296123, V: 0.25}) || s.Values[1].T != 1764491696000 || !math.IsNaN(s.Values[1].V) {
					t.Errorf("series %+v", *s)
				}
			})
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if n != tc.series || len(a.warnings) != tc.warnings {
				t.Errorf("%d series, %d warnings; want %d, %d", n, len(a.warnings), tc.series, tc.warnings)
			}
			if (a.err == nil) != (tc.apiErr == "") || (a.err != nil && a.err.Type != tc.apiErr) {
				t.Errorf("Prometheus error %v, want %q", a.err, tc.apiErr)
			}
		})
	}
}

// FuzzDecodeRange: whatever a server (or something in front of it) answers, decodeRange returns
// an answer or an error, without panicking, and an answer it accepts without Prometheus's error
// said "success".
func FuzzDecodeRange(f *testing.F) {
	f.Add(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"namespace":"a","resourcequota":"q","resource":"pods"},"values":[[1,"2"]]}]},"warnings":["w"]}`)
	f.Add(`{"status":"error","errorType":"bad_data","error":"x"}`)
	f.Add(`{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1e300,"+Inf"],[ -1 , "NaN" ]]}]}}`)
	f.Fuzz(func(t *testing.T, body string) {
		a, err := decodeRange(strings.NewReader(body), func(*rangeSeries) {})
		// (or with the status spelled in \u escapes)
		if err == nil && a.err == nil && !strings.Contains(body, `"success"`) && !strings.Contains(body, `\u`) {
			t.Fatalf("accepted %q", body)
		}
	})
}
