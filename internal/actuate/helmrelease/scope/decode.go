package scope

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Object is one object of a release's manifest or hook, decoded as helm's uninstall acts on it.
type Object struct {
	// Obj is the object as the manifest has it, with Namespace filled in.
	Obj *unstructured.Unstructured
	// Mapping is its kind's resource and scope, from the API server's discovery.
	Mapping *meta.RESTMapping
	// Namespace is where it is: its own, or the release's for a namespaced object without one;
	// empty for a cluster-scoped one.
	Namespace, Name string
}

// Decoder decodes a YAML or JSON stream of manifests the way helm's kube client builds them
// (helm v3, pkg/kube Client.Build: kubectl's resource builder, continuing on error, a List
// flattened into its items, the release's namespace as the default): documents split at
// `---`, empty and `null` documents skipped, each mapped to its resource by Mapper, a namespaced
// object without a namespace given Namespace. What it cannot decode is an error naming only
// the document's position and a YAML line (a decoder's message may quote the document: a
// Secret's data), and the documents after it are still decoded, but those after a syntax
// error, where the stream cannot be followed.
//
// The Uninstaller both checks a release (Check) and acts on it with one Decoder, so what is
// checked is what is acted on; TestDecoderAsHelm and FuzzDecoderAsHelm compare it with helm's
// own kube client, whose decoding Kustos's uninstall must match.
type Decoder struct {
	Mapper    meta.RESTMapper
	Namespace string
}

var _ Builder = Decoder{}

// Build decodes r.
func (d Decoder) Build(r io.Reader) ([]Object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []Object
	var errs []error
	for doc := 1; ; doc++ {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			// The stream cannot be followed past a syntax error. The decoders' messages may quote
			// the document ("invalid Yaml document separator: <the line>"); only the YAML line
			// number is passed on.
			return out, errors.Join(append(errs, syntaxError(doc, err))...)
		}
		data := bytes.TrimSpace(raw.Raw)
		if len(data) == 0 || bytes.Equal(data, []byte("null")) {
			continue
		}
		objs, err := d.objects(data)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", doc, err))
		}
		out = append(out, objs...)
	}
	return out, errors.Join(errs...)
}

// syntaxError says that document doc cannot be read, without quoting it.
func syntaxError(doc int, err error) error {
	if m := yamlLine.FindString(err.Error()); m != "" { // scope.go's
		return fmt.Errorf("document %d: not valid YAML (%s)", doc, m)
	}
	return fmt.Errorf("document %d: not valid YAML or JSON", doc)
}

// errUndecodable is a document that is not a Kubernetes object: no kind, not a JSON object, or
// a List in a List.
var errUndecodable = errors.New("cannot be decoded as a Kubernetes object")

// objects decodes one document as kubectl's builder does: the unstructured JSON scheme (a
// document with an items field is a list whatever its kind, and an item without kind and
// apiVersion takes the list's kind less "List"), the list's own kind mapped, then its items.
func (d Decoder) objects(data []byte) ([]Object, error) {
	obj, _, err := unstructured.UnstructuredJSONScheme.Decode(data, nil, nil)
	if err != nil {
		return nil, errUndecodable // its message may quote the document
	}
	// kubectl's builder refuses metadata of the wrong shape (a name that is a number) rather
	// than reading it as empty, which would give the object the default namespace.
	var m struct {
		metav1.TypeMeta   `json:""`
		metav1.ObjectMeta `json:"metadata,omitempty"`
	}
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, errUndecodable
	}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		one, err := d.object(o)
		if err != nil {
			return nil, err
		}
		return []Object{one}, nil
	case *unstructured.UnstructuredList:
		gvk := o.GroupVersionKind()
		if _, err := d.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, err
		}
		var out []Object
		var errs []error
		for i := range o.Items {
			item := &o.Items[i]
			if item.GetKind() == "" || item.IsList() {
				errs = append(errs, errUndecodable)
				continue
			}
			one, err := d.object(item)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, one)
		}
		return out, errors.Join(errs...)
	}
	return nil, errUndecodable
}

// object maps u to its resource and gives it the default namespace when it is namespaced.
func (d Decoder) object(u *unstructured.Unstructured) (Object, error) {
	gvk := u.GroupVersionKind()
	m, err := d.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return Object{}, err // a *meta.NoKindMatchError names the kind, which Check reports
	}
	if m.Scope == nil || m.Scope.Name() != meta.RESTScopeNameNamespace {
		return Object{Obj: u, Mapping: m, Name: u.GetName()}, nil
	}
	ns := u.GetNamespace()
	if ns == "" {
		ns = d.Namespace
		if u.Object["metadata"] == nil { // `metadata:` with nothing: SetNamespace would do nothing
			u.Object["metadata"] = map[string]any{}
		}
		u.SetNamespace(ns)
	}
	return Object{Obj: u, Mapping: m, Namespace: ns, Name: u.GetName()}, nil
}
