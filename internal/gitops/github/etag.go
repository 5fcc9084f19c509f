package github

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// CacheHeader marks a response served from the ETag cache after GitHub answered 304.
const CacheHeader = "X-Kustos-Cache"

// maxCachedBody bounds one cached body; larger responses are passed through uncached. A page
// of 100 pull requests is about 1.5 MB (each embeds its head and base repositories), and
// listing Kustos's pull requests for the PR budget should cost no rate limit while nothing
// changed.
const maxCachedBody = 4 << 20

// maxCacheBytes bounds the bodies of the whole cache; the least recently used go first.
const maxCacheBytes = 64 << 20

// etagCache makes every GET conditional: it remembers the last 200 body and ETag per
// (credential identity, Accept, URL), sends If-None-Match, and turns GitHub's 304 (which costs
// no rate limit) into the cached 200 marked with "X-Kustos-Cache: hit". LRU-bounded.
type etagCache struct {
	next     http.RoundTripper
	identity string
	max      int
	maxBytes int // of all cached bodies (maxCacheBytes)

	mu    sync.Mutex
	ll    *list.List // front = most recent; values *cacheEntry
	items map[string]*list.Element
	bytes int // of the cached bodies
}

type cacheEntry struct {
	key    string
	etag   string
	header http.Header
	body   []byte
}

func newETagCache(next http.RoundTripper, maxEntries int, identity string) *etagCache {
	return &etagCache{next: next, identity: identity, max: maxEntries, maxBytes: maxCacheBytes, ll: list.New(), items: map[string]*list.Element{}}
}

func (c *etagCache) key(req *http.Request) string {
	id := c.identity
	if id == "" {
		sum := sha256.Sum256([]byte(req.Header.Get("Authorization")))
		id = hex.EncodeToString(sum[:])
	}
	return id + "\x00" + req.Header.Get("Accept") + "\x00" + req.URL.String()
}

func (c *etagCache) get(k string) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.ll.MoveToFront(el)
		return el.Value.(*cacheEntry)
	}
	return nil
}

func (c *etagCache) put(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[e.key]; ok {
		c.bytes += len(e.body) - len(el.Value.(*cacheEntry).body)
		el.Value = e
		c.ll.MoveToFront(el)
	} else {
		c.items[e.key] = c.ll.PushFront(e)
		c.bytes += len(e.body)
	}
	for c.ll.Len() > c.max || (c.bytes > c.maxBytes && c.ll.Len() > 1) {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.items, old.Value.(*cacheEntry).key)
		c.bytes -= len(old.Value.(*cacheEntry).body)
	}
}

func (c *etagCache) remove(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.ll.Remove(el)
		delete(c.items, k)
		c.bytes -= len(el.Value.(*cacheEntry).body)
	}
}

// Len is the number of cached responses.
func (c *etagCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

func (c *etagCache) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.Header.Get("If-None-Match") != "" ||
		req.Header.Get("If-Modified-Since") != "" || req.Header.Get("Range") != "" {
		return c.next.RoundTrip(req)
	}
	k := c.key(req)
	entry := c.get(k)
	out := req
	if entry != nil {
		out = req.Clone(req.Context())
		out.Header.Set("If-None-Match", entry.etag)
	}
	resp, err := c.next.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && entry != nil:
		drain(resp)
		h := entry.header.Clone()
		for name, v := range resp.Header { // fresh rate-limit counters, date, etag
			n := strings.ToLower(name)
			if strings.HasPrefix(n, "x-ratelimit-") || n == "date" || n == "etag" || n == "x-github-request-id" {
				h[name] = v
			}
		}
		h.Set(CacheHeader, "hit")
		h.Set("Content-Length", strconv.Itoa(len(entry.body)))
		return &http.Response{
			Status: "200 OK", StatusCode: http.StatusOK,
			Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor,
			Header: h, Body: io.NopCloser(bytes.NewReader(entry.body)),
			ContentLength: int64(len(entry.body)), Request: req,
		}, nil
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxCachedBody+1))
		if err != nil {
			resp.Body.Close()
			return nil, err
		}
		if len(b) > maxCachedBody {
			rest := resp.Body
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(b), rest), rest}
			return resp, nil
		}
		resp.Body.Close()
		c.put(&cacheEntry{key: k, etag: resp.Header.Get("ETag"), header: resp.Header.Clone(), body: b})
		resp.Body = io.NopCloser(bytes.NewReader(b))
		return resp, nil
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		c.remove(k)
	}
	return resp, nil
}
