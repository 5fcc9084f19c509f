package admission

import (
	"context"
	"fmt"
	"runtime"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
)

// Path is where the manager's webhook server serves the Cleaner validator: controller-runtime's
// path for kustos.io/v1alpha1 Cleaner. ValidatingWebhookConfigurations (the chart's, the
// tests') name it.
const Path = "/validate-kustos-io-v1alpha1-cleaner"

// DefaultTimeout bounds one review when Options.Timeout is 0. The API server gives the webhook
// timeoutSeconds (10 in the chart); answering within half of it leaves room for the network.
const DefaultTimeout = 5 * time.Second

// GroupKind is the Cleaner's, as the Invalid status names it.
var GroupKind = schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "Cleaner"}

// Options tune a CleanerValidator. The zero value is usable.
type Options struct {
	// Timeout bounds one review: a Cleaner whose check takes longer is refused with a Timeout
	// status (the client may retry). 0: DefaultTimeout.
	Timeout time.Duration
	// MaxConcurrent is how many Cleaners are checked at once; further reviews wait for a slot
	// within their Timeout. 0: GOMAXPROCS (checking is CPU work).
	MaxConcurrent int
}

// CleanerValidator is controller-runtime's admission.Validator for Cleaners. Build it with
// NewCleanerValidator; it is safe for concurrent use.
type CleanerValidator struct {
	timeout time.Duration
	slots   chan struct{}
}

var _ cradmission.Validator[*v1alpha1.Cleaner] = (*CleanerValidator)(nil)

// NewCleanerValidator returns a validator with o's limits.
func NewCleanerValidator(o Options) *CleanerValidator {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = runtime.GOMAXPROCS(0)
	}
	return &CleanerValidator{timeout: o.Timeout, slots: make(chan struct{}, o.MaxConcurrent)}
}

// SetupWithManager registers v at Path on mgr's webhook server (which this adds to the manager,
// to run on every replica).
func SetupWithManager(mgr ctrl.Manager, v *CleanerValidator) error {
	return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.Cleaner{}).
		WithValidator(v).
		WithValidatorCustomPath(Path).
		Complete()
}

// Validate checks cl as the controller does: the spec compiles (durations, targets, CEL
// conditions within their cost limits) and every target is in the Cleaner's own namespace.
// Each error has its field path.
func Validate(cl *v1alpha1.Cleaner) field.ErrorList {
	spec, errs := ephemeral.Compile(cl.Spec)
	if len(errs) > 0 {
		return errs
	}
	return spec.CheckNamespace(cl.Namespace)
}

// ValidateCreate checks a new Cleaner.
func (v *CleanerValidator) ValidateCreate(ctx context.Context, cl *v1alpha1.Cleaner) (cradmission.Warnings, error) {
	return nil, v.check(ctx, cl)
}

// ValidateUpdate checks the Cleaner as it would be after the update, whatever changed: a
// Cleaner that was stored invalid (before the webhook ran) cannot be edited into another invalid
// one. A Cleaner being deleted is not checked: it is never evaluated again, and refusing its
// updates would only keep its finalizers from being removed.
func (v *CleanerValidator) ValidateUpdate(ctx context.Context, _, cl *v1alpha1.Cleaner) (cradmission.Warnings, error) {
	if cl.DeletionTimestamp != nil {
		return nil, nil
	}
	return nil, v.check(ctx, cl)
}

// ValidateDelete allows every delete.
func (v *CleanerValidator) ValidateDelete(context.Context, *v1alpha1.Cleaner) (cradmission.Warnings, error) {
	return nil, nil
}

// check runs Validate within the validator's timeout and concurrency limit and turns its errors
// into an Invalid status (an APIStatus, which controller-runtime passes on to the API server
// with its causes).
func (v *CleanerValidator) check(ctx context.Context, cl *v1alpha1.Cleaner) error {
	ctx, cancel := context.WithTimeout(ctx, v.timeout)
	defer cancel()
	// The request names the object when the decoded one does not (generateName, or a body
	// without metadata.namespace).
	if req, err := cradmission.RequestFromContext(ctx); err == nil {
		if cl.Namespace == "" {
			cl.Namespace = req.Namespace
		}
		if cl.Name == "" {
			cl.Name = req.Name
		}
	}
	select {
	case v.slots <- struct{}{}:
	case <-ctx.Done():
		return v.timedOut(cl, "waiting for a free slot")
	}
	done := make(chan field.ErrorList, 1)
	go func() {
		// The slot is held until the check ends, even after the review gave up on it: the
		// limit is on the work running, not on the reviews waiting.
		errs := validateRecovering(cl)
		<-v.slots
		done <- errs
	}()
	select {
	case errs := <-done:
		if len(errs) == 0 {
			return nil
		}
		return apierrors.NewInvalid(GroupKind, cl.Name, errs)
	case <-ctx.Done():
		return v.timedOut(cl, "checking its spec")
	}
}

// validateRecovering is Validate, with a panic (a bug in the CEL library, say) turned into an
// internal error: it runs on a goroutine of its own, where a panic would end the process.
func validateRecovering(cl *v1alpha1.Cleaner) (errs field.ErrorList) {
	defer func() {
		if r := recover(); r != nil {
			errs = field.ErrorList{field.InternalError(field.NewPath("spec"), fmt.Errorf("checking the spec panicked: %v", r))}
		}
	}()
	return Validate(cl)
}

func (v *CleanerValidator) timedOut(cl *v1alpha1.Cleaner, doing string) error {
	return apierrors.NewTimeoutError(fmt.Sprintf("validating Cleaner %s/%s took longer than %s (%s)", cl.Namespace, cl.Name, v.timeout, doing), 1)
}
