package github

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// etagServer serves /items/<name> with ETag "<name>-v<version>" and answers 304 when matched.
type etagServer struct {
	mu       sync.Mutex
	version  map[string]int
	inm      []string // If-None-Match per request ("" when absent)
	notFound map[string]bool
}

func (s *etagServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inm = append(s.inm, r.Header.Get("If-None-Match"))
	if s.notFound[r.URL.Path] {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	etag := fmt.Sprintf(`"%s-v%d"`, r.URL.Path, s.version[r.URL.Path])
	w.Header().Set("X-RateLimit-Remaining", fmt.Sprint(5000-len(s.inm)))
	w.Header().Set("X-RateLimit-Reset", "1800003600")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"path":%q,"version":%d}`, r.URL.Path, s.version[r.URL.Path])
}

func TestETagCache(t *testing.T) {
	srv := &etagServer{version: map[string]int{}, notFound: map[string]bool{}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cache := newETagCache(http.DefaultTransport, 2, "")

	type want struct {
		code    int
		body    string
		hit     bool
		sentINM string
	}
	get := func(path, auth string) want {
		t.Helper()
		req, _ := http.NewRequest("GET", hs.URL+path, http.NoBody)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := cache.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.mu.Lock()
		inm := srv.inm[len(srv.inm)-1]
		srv.mu.Unlock()
		if resp.Header.Get(CacheHeader) == "hit" && resp.Header.Get("X-RateLimit-Remaining") != fmt.Sprint(5000-len(srv.inm)) {
			t.Errorf("cached response does not carry the 304's rate-limit headers")
		}
		return want{resp.StatusCode, string(b), resp.Header.Get(CacheHeader) == "hit", inm}
	}
	body := func(p string, v int) string { return fmt.Sprintf(`{"path":%q,"version":%d}`, p, v) }
	steps := []struct {
		name   string
		do     func()
		path   string
		auth   string
		expect want
	}{
		{"first GET is unconditional", nil, "/a", "token one", want{200, body("/a", 0), false, ""}},
		{"second GET is conditional and served from cache", nil, "/a", "token one", want{200, body("/a", 0), true, `"/a-v0"`}},
		{"another identity does not share the entry", nil, "/a", "token two", want{200, body("/a", 0), false, ""}},
		{"changed resource: new body, new etag stored", func() { srv.version["/a"] = 1 }, "/a", "token one", want{200, body("/a", 1), false, `"/a-v0"`}},
		{"then a hit on the new version", nil, "/a", "token one", want{200, body("/a", 1), true, `"/a-v1"`}},
		{"fill: /b", nil, "/b", "token one", want{200, body("/b", 0), false, ""}},
		{"fill: /c evicts the least recently used", nil, "/c", "token one", want{200, body("/c", 0), false, ""}},
		{"/a (token two) was evicted", nil, "/a", "token two", want{200, body("/a", 1), false, ""}},
		{"404 passes through and evicts", func() { srv.notFound["/c"] = true }, "/c", "token one", want{404, "", false, `"/c-v0"`}},
		{"after 404 no conditional request", func() { srv.notFound["/c"] = false }, "/c", "token one", want{200, body("/c", 0), false, ""}},
	}
	for _, st := range steps {
		if st.do != nil {
			st.do()
		}
		if got := get(st.path, st.auth); got != st.expect {
			t.Errorf("%s: got %+v, want %+v", st.name, got, st.expect)
		}
	}
	if cache.Len() > 2 {
		t.Errorf("cache holds %d entries, bound is 2", cache.Len())
	}
}

func TestETagCacheSkipsNonGET(t *testing.T) {
	srv := &etagServer{version: map[string]int{}, notFound: map[string]bool{}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cache := newETagCache(http.DefaultTransport, 10, "id")
	for range 2 {
		req, _ := http.NewRequest("PATCH", hs.URL+"/a", http.NoBody)
		resp, err := cache.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if cache.Len() != 0 || srv.inm[1] != "" {
		t.Errorf("non-GET cached: len=%d inm=%q", cache.Len(), srv.inm)
	}
}

// TestETagCacheBoundsBytes: the least recently used bodies go when the cache's bodies
// together pass the byte bound, however few entries there are.
func TestETagCacheBoundsBytes(t *testing.T) {
	srv := &etagServer{version: map[string]int{}, notFound: map[string]bool{}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cache := newETagCache(http.DefaultTransport, 100, "id")
	one := len(fmt.Sprintf(`{"path":%q,"version":%d}`, "/a", 0))
	cache.maxBytes = 2*one + 1
	for _, p := range []string{"/a", "/b", "/c", "/c"} {
		req, _ := http.NewRequest("GET", hs.URL+p, http.NoBody)
		if _, err := roundTrip(cache, req); err != nil {
			t.Fatal(err)
		}
	}
	if cache.Len() != 2 || cache.get(cache.key(mustGET(hs.URL+"/a"))) != nil {
		t.Errorf("cache holds %d entries (want /b and /c; /a evicted by the byte bound)", cache.Len())
	}
	if cache.bytes != 2*one {
		t.Errorf("cache counts %d bytes, want %d", cache.bytes, 2*one)
	}
}

func mustGET(url string) *http.Request {
	req, _ := http.NewRequest("GET", url, http.NoBody)
	return req
}
