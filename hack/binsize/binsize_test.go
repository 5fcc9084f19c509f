package main

import (
	"reflect"
	"strings"
	"testing"
)

var testModules = NewModules("github.com/kustos-dev/kustos", []string{
	"helm.sh/helm/v3", "k8s.io/client-go", "k8s.io/api", "gopkg.in/yaml.v3",
	"github.com/google/cel-go", "github.com/google/cel-go/extra", "go.yaml.in/yaml/v3",
})

func TestOfSymbol(t *testing.T) {
	for _, tc := range []struct{ symbol, want string }{
		{"k8s.io/api/core/v1.(*Pod).String", "k8s.io/api"},
		{"k8s.io/api.init", "k8s.io/api"},
		{"type:*helm.sh/helm/v3/pkg/action.Uninstall", "helm.sh/helm/v3"},
		{"go:itab.*k8s.io/client-go/rest.Config,fmt.Stringer", "k8s.io/client-go"},
		{"gopkg.in/yaml.v3.Unmarshal", "gopkg.in/yaml.v3"},
		{"go.yaml.in/yaml/v3.(*parser).parse", "go.yaml.in/yaml/v3"},
		// The longest module wins: a nested module is its own.
		{"github.com/google/cel-go/extra/x.F", "github.com/google/cel-go/extra"},
		{"github.com/google/cel-go/cel.NewEnv", "github.com/google/cel-go"},
		// A module path is matched whole, not as a prefix of a longer name.
		{"k8s.io/apiextensions-apiserver/pkg.F", Unattributed},
		{"runtime.mallocgc", Std},
		{"net/http.(*Client).Do", Std},
		{"vendor/golang.org/x/net/http2/hpack.NewEncoder", Std},
		{"type:map[string]*k8s.io/api/core/v1.Pod", Unattributed},
		{"main.main", "github.com/kustos-dev/kustos"},
		{"github.com/kustos-dev/kustos/internal/app.New", "github.com/kustos-dev/kustos"},
		{"example.com/unknown.F", Unattributed},
		{"go:func.*", Unattributed},
		{"$f64.3ff0000000000000", Unattributed},
	} {
		t.Run(tc.symbol, func(t *testing.T) {
			if got := testModules.OfSymbol(tc.symbol); got != tc.want {
				t.Errorf("OfSymbol(%q) = %q, want %q", tc.symbol, got, tc.want)
			}
		})
	}
}

func TestOfPackage(t *testing.T) {
	for _, tc := range []struct{ pkg, want string }{
		{"k8s.io/api", "k8s.io/api"},
		{"k8s.io/api/core/v1", "k8s.io/api"},
		{"k8s.io/apimachinery/pkg/runtime", Unattributed},
		{"gopkg.in/yaml.v3", "gopkg.in/yaml.v3"},
		{"crypto/tls", Std},
		{"runtime", Std},
		{"main", "github.com/kustos-dev/kustos"},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			if got := testModules.OfPackage(tc.pkg); got != tc.want {
				t.Errorf("OfPackage(%q) = %q, want %q", tc.pkg, got, tc.want)
			}
		})
	}
}

func TestParseNM(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []Symbol
		err      string
	}{
		{name: "text and data", in: " 3b19d60       4529 T helm.sh/helm/v3/pkg/action.(*Uninstall).Run\n 4e0d71c          4 r $f32.30800000\n",
			want: []Symbol{{Addr: 0x3b19d60, Size: 4529, Type: 'T', Name: "helm.sh/helm/v3/pkg/action.(*Uninstall).Run"}, {Addr: 0x4e0d71c, Size: 4, Type: 'r', Name: "$f32.30800000"}}},
		{name: "a name with spaces", in: " 51ec1a0        120 R type:func(*net/http.Request) error\n",
			want: []Symbol{{Addr: 0x51ec1a0, Size: 120, Type: 'R', Name: "type:func(*net/http.Request) error"}}},
		{name: "undefined, nameless and local copies skipped", in: "        0 U malloc@GLIBC_2.2.5\n       0          0 _ \n 3b19d60       4529 t local.helm.sh/helm/v3/pkg/action.(*Uninstall).Run\n\n"},
		{name: "size not a number", in: " 1000 big T x\n", err: `size "big"`},
		{name: "address not hexadecimal", in: " zz 10 T x\n", err: `address "zz"`},
		{name: "too few fields", in: " 1000 10 T\n", err: "want address, size, type and name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNM(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseInitTrace(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []Init
		err      bool
	}{
		{name: "lines and the program's own output", in: "init k8s.io/api/core/v1 @71 ms, 0.17 ms clock, 96976 bytes, 535 allocs\nkustos dev\ninit runtime @0.011 ms, 0.020 ms clock, 0 bytes, 0 allocs\n",
			want: []Init{{Package: "k8s.io/api/core/v1", ClockMS: 0.17, Bytes: 96976, Allocs: 535}, {Package: "runtime", ClockMS: 0.02}}},
		{name: "none", in: "kustos dev\n"},
		{name: "garbled", in: "init x @1 ms, many ms clock, 1 bytes, 1 allocs\n", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseInitTrace(strings.NewReader(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Usage
		err      bool
	}{
		{name: "all three", in: "Name:\tkustos\nVmHWM:\t   93184 kB\nVmRSS:\t   93000 kB\nRssAnon:\t   10444 kB\nRssFile:\t   82740 kB\nRssShmem:\t       0 kB\n",
			want: Usage{Peak: 93184, Anon: 10444, File: 82740}},
		{name: "one missing", in: "VmHWM:\t 1 kB\nRssAnon:\t 1 kB\n", err: true},
		{name: "not kB", in: "VmHWM:\t 1 MB\nRssAnon:\t 1 kB\nRssFile:\t 1 kB\n", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStatus(strings.NewReader(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCosts(t *testing.T) {
	syms := []Symbol{
		{Addr: 0x100, Size: 100, Type: 'T', Name: "k8s.io/api/core/v1.init"},
		{Addr: 0x200, Size: 50, Type: 'R', Name: "type:*k8s.io/api/core/v1.Pod"},
		{Addr: 0x300, Size: 30, Type: 'T', Name: "helm.sh/helm/v3/pkg/kube.New"},
		{Addr: 0x400, Size: 7, Type: 'B', Name: "helm.sh/helm/v3/pkg/kube.zeroed"},
		// Typed D by nm but in a section the file does not hold: not counted.
		{Addr: 0x900, Size: 1 << 25, Type: 'D', Name: "crypto/internal/fips140/drbg.memory"},
	}
	inFile := func(a uint64) bool { return a < 0x800 }
	costs := BySize(testModules, syms, inFile)
	AddInits(testModules, costs, []Init{{Package: "k8s.io/api/core/v1", ClockMS: 1.5, Bytes: 1000, Allocs: 10}, {Package: "crypto/tls", ClockMS: 0.5, Bytes: 10, Allocs: 1}})
	for _, tc := range []struct {
		module string
		want   Cost
	}{
		{"k8s.io/api", Cost{Name: "k8s.io/api", Text: 100, Data: 50, Symbols: 2, Inits: 1, ClockMS: 1.5, Bytes: 1000, Allocs: 10}},
		{"helm.sh/helm/v3", Cost{Name: "helm.sh/helm/v3", Text: 30, Symbols: 1}},
		{Std, Cost{Name: Std, Inits: 1, ClockMS: 0.5, Bytes: 10, Allocs: 1}},
	} {
		t.Run(tc.module, func(t *testing.T) {
			if got := costs[tc.module]; got == nil || *got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	top := Top(costs, 2, func(c *Cost) float64 { return float64(c.Text) })
	if len(top) != 2 || top[0].Name != "k8s.io/api" || top[1].Name != "helm.sh/helm/v3" {
		t.Errorf("Top 2 by text = %+v", top)
	}
	if total := Total(costs); total.Text != 130 || total.Data != 50 || total.Inits != 2 {
		t.Errorf("Total = %+v", total)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []int64
		want int64
	}{{nil, 0}, {[]int64{5}, 5}, {[]int64{9, 1, 5}, 5}, {[]int64{4, 1, 3, 2}, 2}} {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
