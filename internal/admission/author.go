package admission

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/authorship"
)

// AuthorPath is where the manager's webhook server serves the author stamper: the path
// controller-runtime would give a mutating webhook for kustos.io/v1alpha1 Cleaner.
// MutatingWebhookConfigurations (the chart's, the tests') name it.
const AuthorPath = "/mutate-kustos-io-v1alpha1-cleaner"

// AuthorStamper is the mutating webhook that records who wrote a Cleaner: on CREATE, and on
// every UPDATE that changes the spec, it sets the annotation authorship.StampAnnotation to a
// stamp of the requesting user as the API server authenticated them (the AdmissionReview's
// userInfo), signed by Signer; on an UPDATE that leaves the spec alone it puts back the stamp
// the Cleaner had, when that one is valid (else the updater becomes the author). Whatever the request itself wrote into that annotation is overwritten either
// way, so nobody can name another author. The last person who changed what a Cleaner does is
// its author: the controller asks what that person may delete before it deletes anything.
//
// The status subresource needs no stamping: the API server keeps a custom resource's metadata
// as it was on a status update.
type AuthorStamper struct {
	Signer *authorship.Signer
	// Scope is --namespace-selector (nil: every namespace). A Cleaner of a namespace outside it
	// belongs to another installation, whose stamper signs it with that installation's key:
	// this one leaves it as it is, or the last stamper to run would overwrite the owner's stamp.
	Scope Scope
	// Now is the stamp's clock (time.Now when nil).
	Now func() time.Time
}

var _ cradmission.Handler = (*AuthorStamper)(nil)

// Scope says which namespaces this installation serves (*nsscope.Scope).
type Scope interface {
	Selects(ctx context.Context, namespace string) (bool, error)
}

// Handle stamps the Cleaner of req.
func (s *AuthorStamper) Handle(ctx context.Context, req cradmission.Request) cradmission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return cradmission.Allowed("")
	}
	if s.Scope != nil {
		ok, err := s.Scope.Selects(ctx, req.Namespace)
		if err != nil {
			return cradmission.Errored(http.StatusInternalServerError, err)
		}
		if !ok {
			return cradmission.Allowed("another installation's namespace (--namespace-selector)")
		}
	}
	var cl v1alpha1.Cleaner
	if err := json.Unmarshal(req.Object.Raw, &cl); err != nil {
		return cradmission.Errored(http.StatusBadRequest, err)
	}
	name := cl.Name
	if name == "" {
		name = req.Name
	}
	if name == "" {
		// The stamp binds the name, which the API server generates only after admission.
		return cradmission.Denied("a Cleaner needs metadata.name: its author stamp names it (generateName is not supported)")
	}
	digest, err := authorship.SpecDigest(cl.Spec)
	if err != nil {
		return cradmission.Errored(http.StatusInternalServerError, err)
	}
	want := ""
	restamp := true
	if req.Operation == admissionv1.Update {
		var old v1alpha1.Cleaner
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return cradmission.Errored(http.StatusBadRequest, err)
		}
		if od, err := authorship.SpecDigest(old.Spec); err == nil && od == digest {
			// What the Cleaner does is unchanged: its author too, whoever updates it now. A
			// Cleaner without a valid stamp (stored while no webhook ran, or from before Kustos
			// stamped authors) is adopted by whoever updates it: they may change its spec, and
			// so become its author, anyway; `kubectl apply` of the same spec is enough.
			if _, err := (authorship.Cleaners{Signer: s.Signer}).Author(&old); err == nil {
				want, restamp = old.Annotations[authorship.StampAnnotation], false
			}
		}
	}
	if restamp {
		now := time.Now
		if s.Now != nil {
			now = s.Now
		}
		if want, err = s.Signer.Sign(req.Namespace, name, digest, authorship.FromUserInfo(req.UserInfo), now()); err != nil {
			return cradmission.Errored(http.StatusInternalServerError, err)
		}
	}
	return cradmission.Patched("", annotationPatch(cl.Annotations, authorship.StampAnnotation, want)...)
}

// annotationPatch sets annotation key to value (removes it when value is empty) in an object
// whose annotations are have, touching nothing else.
func annotationPatch(have map[string]string, key, value string) []jsonpatch.JsonPatchOperation {
	cur, present := have[key]
	switch {
	case value == "" && !present:
		return nil
	case value == "":
		return []jsonpatch.JsonPatchOperation{{Operation: "remove", Path: "/metadata/annotations/" + escapePointer(key)}}
	case present && cur == value:
		return nil
	case have == nil:
		return []jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/metadata/annotations", Value: map[string]string{key: value}}}
	}
	return []jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/metadata/annotations/" + escapePointer(key), Value: value}}
}

// escapePointer escapes a JSON Pointer token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
