package v1alpha1_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ControllerGen is the generator `make generate` runs; the Makefile reads this line.
const controllerGen = "sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0"

// TestGeneratedFilesAreCurrent regenerates the deepcopy functions and the CRD into a temporary
// directory and fails when the committed files differ: a type changed without `make generate`
// would ship a CRD that the API server validates differently from what the Go types say.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command("go", "run", controllerGen, "object", "crd:crdVersions=v1", "paths=./api/...",
		"output:object:dir="+filepath.Join(out, "object"), "output:crd:dir="+filepath.Join(out, "crd"))
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, b)
	}
	for generated, committed := range map[string]string{
		filepath.Join(out, "object", "zz_generated.deepcopy.go"): filepath.Join(root, "api", "v1alpha1", "zz_generated.deepcopy.go"),
		filepath.Join(out, "crd", "kustos.io_cleaners.yaml"):     filepath.Join(root, "charts", "kustos", "files", "crds", "kustos.io_cleaners.yaml"),
	} {
		want, err := os.ReadFile(generated)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(committed)
		if err != nil {
			t.Fatalf("%v (run `make generate`)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `make generate` and commit the result", committed)
		}
	}
}
