package githubtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// SpecEnv names the environment variable that overrides the path of GitHub's OpenAPI
// description (api.github.com.json from @octokit/openapi).
const SpecEnv = "GITHUBTEST_OPENAPI_SPEC"

// specRelPath is where hack/setup-openapi.sh installs the description, relative to the
// repository root.
const specRelPath = "bin/openapi/node_modules/@octokit/openapi/generated/api.github.com.json"

// Contract is GitHub's REST API description, loaded once per process, with the operations this
// server implements resolved up front so that checking a message costs a map lookup plus the
// schema visit.
type Contract struct {
	doc  *openapi3.T
	path string
	// LoadDuration is how long reading and resolving the description took.
	LoadDuration time.Duration

	mu    sync.Mutex
	cache map[string]*routers.Route // "METHOD template" -> route
}

var (
	contractOnce sync.Once
	contract     *Contract
	contractErr  error
)

// SpecPath returns the path of the OpenAPI description the server checks against:
// $GITHUBTEST_OPENAPI_SPEC, or bin/openapi/... under the repository root (the first parent
// directory of the working directory that holds go.mod and bin/, or go.mod of this module).
func SpecPath() string {
	if p := os.Getenv(SpecEnv); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		return specRelPath
	}
	first := ""
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if first == "" {
				first = dir
			}
			if _, err := os.Stat(filepath.Join(dir, specRelPath)); err == nil {
				return filepath.Join(dir, specRelPath)
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if first == "" {
		return specRelPath
	}
	return filepath.Join(first, specRelPath)
}

// LoadContract loads (once per process) and returns GitHub's OpenAPI description.
func LoadContract() (*Contract, error) {
	contractOnce.Do(func() {
		contract, contractErr = loadContract(SpecPath())
	})
	return contract, contractErr
}

func loadContract(path string) (*Contract, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("GitHub OpenAPI description not found at %s (run make testbin, which runs hack/setup-openapi.sh): %w", path, err)
	}
	start := time.Now()
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pruned, err := pruneSpec(raw, servedTemplates())
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	doc, err := loader.LoadFromData(pruned)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	// The servers list names https://api.github.com; routes are resolved by this package, not
	// by a kin-openapi router, so the host never matters.
	return &Contract{doc: doc, path: path, LoadDuration: time.Since(start), cache: map[string]*routers.Route{}}, nil
}

// Path is the file the contract was loaded from.
func (c *Contract) Path() string { return c.path }

// route returns the operation for an OpenAPI path template such as
// "/repos/{owner}/{repo}/pulls/{pull_number}".
func (c *Contract) route(method, template string) (*routers.Route, error) {
	key := method + " " + template
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.cache[key]; ok {
		return r, nil
	}
	item := c.doc.Paths.Find(template)
	if item == nil {
		return nil, fmt.Errorf("path %s is not in GitHub's OpenAPI description", template)
	}
	op := item.GetOperation(method)
	if op == nil {
		return nil, fmt.Errorf("operation %s %s is not in GitHub's OpenAPI description", method, template)
	}
	r := &routers.Route{Spec: c.doc, Path: template, PathItem: item, Method: method, Operation: op}
	c.cache[key] = r
	return r, nil
}

func (c *Contract) options() *openapi3filter.Options {
	return &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
		MultiError:            false,
		SkipSettingDefaults:   true,
	}
}

// CheckRequest validates a request (path and query parameters, body) against the operation
// method+template. The request body is read and restored.
func (c *Contract) CheckRequest(req *http.Request, template string, pathParams map[string]string) error {
	route, err := c.route(req.Method, template)
	if err != nil {
		return err
	}
	opts := c.options()
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return err
		}
		body = relaxRequestBody(req.Method, template, body, opts)
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route, Options: opts}
	return openapi3filter.ValidateRequest(req.Context(), in)
}

// relaxRequestBody documents and applies the request-side relaxations:
//
//   - POST /repos/{owner}/{repo}/issues/{issue_number}/labels: go-github v60's
//     Issues.AddLabelsToIssue sends a bare JSON array of names. GitHub accepts it (the
//     operation's description says "You can also pass an array of labels directly"), but
//     @octokit/openapi 23's schema only lists the {"labels": [...]} form, so a bare array is
//     validated as {"labels": <array>}.
//   - A body of JSON null (ghinstallation posts "null" to the access_tokens endpoint when no
//     InstallationTokenOptions are set; GitHub accepts it) is validated as no body.
func relaxRequestBody(method, template string, body []byte, opts *openapi3filter.Options) []byte {
	trimmed := bytes.TrimSpace(body)
	if bytes.Equal(trimmed, []byte("null")) {
		opts.ExcludeRequestBody = true
		return body
	}
	if method == http.MethodPost && template == "/repos/{owner}/{repo}/issues/{issue_number}/labels" && len(trimmed) > 0 && trimmed[0] == '[' {
		return append(append([]byte(`{"labels":`), trimmed...), '}')
	}
	return body
}

// CheckResponse validates a response (status declared for the operation, content type, body
// schema) against the operation req.Method+template.
func (c *Contract) CheckResponse(req *http.Request, template string, pathParams map[string]string, status int, header http.Header, body []byte) error {
	route, err := c.route(req.Method, template)
	if err != nil {
		return err
	}
	opts := c.options()
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route, Options: opts},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                opts,
	}
	if status == http.StatusNotModified || status == http.StatusNoContent {
		if len(body) != 0 {
			return fmt.Errorf("status %d must have no body, got %d bytes", status, len(body))
		}
	}
	return openapi3filter.ValidateResponse(req.Context(), in)
}

// Declares reports whether the operation declares the response status.
func (c *Contract) Declares(method, template string, status int) bool {
	route, err := c.route(method, template)
	if err != nil {
		return false
	}
	return route.Operation.Responses.Status(status) != nil
}

// shortErr trims kin-openapi's (very long) schema dumps from an error.
func shortErr(err error) string {
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		return fmt.Sprintf("/%s: %s (value %.300s)", strings.Join(se.JSONPointer(), "/"), se.Reason, fmt.Sprint(se.Value))
	}
	s := err.Error()
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return s
}

func servedTemplates() []string {
	var ts []string
	for _, rt := range routes {
		ts = append(ts, rt.template)
	}
	return ts
}

// pruneSpec keeps the paths this server serves and the components they reference
// (transitively), and drops the media-type examples. kin-openapi resolves every $ref of the
// full 13 MB description in tens of seconds; the pruned document (a few hundred KB) loads in
// well under a second with identical schemas for the kept operations.
func pruneSpec(raw []byte, templates []string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	allPaths, _ := doc["paths"].(map[string]any)
	components, _ := doc["components"].(map[string]any)
	paths := map[string]any{}
	for _, t := range templates {
		if item, found := allPaths[t]; found {
			paths[t] = item
		}
	}
	kept := map[string]map[string]any{}
	var queue []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, isMedia := x["schema"]; isMedia {
				delete(x, "examples")
				delete(x, "example")
			}
			if ref, isRef := x["$ref"].(string); isRef {
				queue = append(queue, ref)
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(paths)
	for len(queue) > 0 {
		ref := queue[0]
		queue = queue[1:]
		parts := strings.Split(strings.TrimPrefix(ref, "#/components/"), "/")
		if len(parts) != 2 || !strings.HasPrefix(ref, "#/components/") {
			continue
		}
		kind, name := parts[0], parts[1]
		if kept[kind] == nil {
			kept[kind] = map[string]any{}
		}
		if _, done := kept[kind][name]; done {
			continue
		}
		group, _ := components[kind].(map[string]any)
		v, found := group[name]
		if !found {
			return nil, fmt.Errorf("dangling $ref %s", ref)
		}
		kept[kind][name] = v
		walk(v)
	}
	comps := map[string]any{}
	for k, v := range kept {
		comps[k] = v
	}
	out := map[string]any{
		"openapi":    doc["openapi"],
		"info":       doc["info"],
		"paths":      paths,
		"components": comps,
	}
	return json.Marshal(out)
}
