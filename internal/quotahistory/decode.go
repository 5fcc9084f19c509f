package quotahistory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// The answer to one range query over every quota is large (10,000 quotas × 4 resources × 15
// points: about 17 MB of JSON), and client_golang holds all of it three times over (the body,
// its data field, a model.Matrix of maps and per-point objects: 250 MB allocated, the heap
// 168 MiB higher for a moment). decodeRange reads it as it arrives instead, one series at a
// time, and keeps only the floats.

// rangeSeries is one series of a range query's answer, as decodeRange hands it on. Values is
// reused for the next series.
type rangeSeries struct {
	Metric struct {
		Namespace     string `json:"namespace"`
		ResourceQuota string `json:"resourcequota"`
		Resource      string `json:"resource"`
	} `json:"metric"`
	Values []point `json:"values"`
}

// point is one [<unix seconds>, "<value>"] pair.
type point struct {
	// T is Unix milliseconds, as Prometheus keeps time.
	T int64
	V float64
}

// UnmarshalJSON reads [1764405296.123, "0.25"] without allocating.
func (p *point) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return fmt.Errorf("a point is [time, \"value\"], not %.40s", b)
	}
	ts, val, ok := bytes.Cut(b[1:len(b)-1], []byte(","))
	if !ok {
		return fmt.Errorf("a point is [time, \"value\"], not %.40s", b)
	}
	sec, err := strconv.ParseFloat(string(bytes.TrimSpace(ts)), 64)
	if err != nil {
		return fmt.Errorf("a point's time: %w", err)
	}
	val = bytes.TrimSpace(val)
	if len(val) < 2 || val[0] != '"' || val[len(val)-1] != '"' {
		return fmt.Errorf("a point's value is a string, not %.40s", val)
	}
	v, err := strconv.ParseFloat(string(val[1:len(val)-1]), 64)
	if err != nil {
		return fmt.Errorf("a point's value: %w", err)
	}
	p.T, p.V = int64(math.Round(sec*1000)), v
	return nil
}

// answer is what decodeRange found besides the series.
type answer struct {
	warnings []string
	// err is Prometheus's own error ("status": "error"), as client_golang reports it.
	err *v1.Error
}

// decodeRange reads a /api/v1/query_range answer from r, handing each series of a matrix to
// visit as it is read. Warnings come after the data in Prometheus's answer, so the caller
// decides what the series are worth only when decodeRange returns.
func decodeRange(r io.Reader, visit func(*rangeSeries)) (answer, error) {
	var a answer
	dec := json.NewDecoder(r)
	if err := delim(dec, '{'); err != nil {
		return a, err
	}
	var status, errorType, errorMsg, resultType string
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return a, err
		}
		switch key {
		case "status":
			err = dec.Decode(&status)
		case "errorType":
			err = dec.Decode(&errorType)
		case "error":
			err = dec.Decode(&errorMsg)
		case "warnings":
			err = dec.Decode(&a.warnings)
		case "data":
			resultType, err = decodeData(dec, visit)
		default:
			err = dec.Decode(&json.RawMessage{})
		}
		if err != nil {
			return a, fmt.Errorf("reading %q: %w", key, err)
		}
	}
	if err := delim(dec, '}'); err != nil {
		return a, err
	}
	switch {
	case status == "error":
		a.err = &v1.Error{Type: v1.ErrorType(errorType), Msg: errorMsg}
	case status != "success":
		return a, fmt.Errorf("status %q, want success or error", status)
	case resultType != "matrix":
		return a, fmt.Errorf("a %q result, want a matrix", resultType)
	}
	return a, nil
}

// decodeData reads the data object, handing each series of its result to visit.
func decodeData(dec *json.Decoder, visit func(*rangeSeries)) (resultType string, err error) {
	if err := delim(dec, '{'); err != nil {
		return "", err
	}
	var s rangeSeries
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return "", err
		}
		switch key {
		case "resultType":
			err = dec.Decode(&resultType)
		case "result":
			if err := delim(dec, '['); err != nil {
				return "", err
			}
			for dec.More() {
				s.Metric = rangeSeries{}.Metric
				s.Values = s.Values[:0]
				if err := dec.Decode(&s); err != nil {
					return "", err
				}
				visit(&s)
			}
			err = delim(dec, ']')
		default:
			err = dec.Decode(&json.RawMessage{})
		}
		if err != nil {
			return "", err
		}
	}
	return resultType, delim(dec, '}')
}

func delim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("got %v, want %v", t, want)
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", errors.New("want an object key")
	}
	return s, nil
}
