package yamledit

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// goldenRemove is testdata/kustomization/<case>/remove.json: which kustomization the input is,
// which file was deleted, and the entries RemoveResource must report (none: the input must come
// back unchanged, and expected.yaml is not read) or the error it must fail with.
type goldenRemove struct {
	Kustomization string   `json:"kustomization"`
	File          string   `json:"file"`
	Removed       []string `json:"removed,omitempty"`
	Error         string   `json:"error,omitempty"` // a key of namedErrors
}

func TestGoldenRemoveResource(t *testing.T) {
	root := filepath.Join("testdata", "kustomization")
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		n++
		name := d.Name()
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, name)
			input, err := os.ReadFile(filepath.Join(dir, "input.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "remove.json"))
			if err != nil {
				t.Fatal(err)
			}
			var gr goldenRemove
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&gr); err != nil {
				t.Fatalf("remove.json: %v", err)
			}
			orig := bytes.Clone(input)
			out, removed, err := RemoveResource(input, gr.Kustomization, gr.File)
			if !bytes.Equal(orig, input) {
				t.Fatal("RemoveResource modified its input")
			}
			if gr.Error != "" {
				want := namedErrors[gr.Error]
				if want == nil {
					t.Fatalf("unknown error name %q", gr.Error)
				}
				if !errors.Is(err, want) {
					t.Fatalf("err = %v, want %v", err, want)
				}
				t.Logf("error: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("RemoveResource: %v", err)
			}
			if !reflect.DeepEqual(removed, gr.Removed) {
				t.Errorf("removed %q, want %q", removed, gr.Removed)
			}
			if len(gr.Removed) == 0 {
				if !bytes.Equal(out, input) {
					t.Errorf("nothing to remove, but the output differs:\n%s", out)
				}
				return
			}
			expPath := filepath.Join(dir, "expected.yaml")
			if *update {
				if err := os.WriteFile(expPath, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			expected, err := os.ReadFile(expPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, expected) {
				t.Errorf("output differs from %s:\n--- got ---\n%s\n--- want ---\n%s", expPath, out, expected)
			}
			// Removing again finds nothing: every entry naming the file went in one call.
			again, removed, err := RemoveResource(out, gr.Kustomization, gr.File)
			if err != nil || len(removed) != 0 || !bytes.Equal(again, out) {
				t.Errorf("second RemoveResource: removed %q, err %v", removed, err)
			}
		})
	}
	if n < 8 {
		t.Errorf("only %d golden cases", n)
	}
}
