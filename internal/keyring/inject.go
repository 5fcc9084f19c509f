package keyring

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CABundleInjector writes CA into the caBundle of every webhook of the named webhook
// configurations (Validating or Mutating, whichever exists by that name), as cert-manager's
// cainjector does. It runs on every replica (they serve the same certificate): at start-up, it
// tries every RetryInterval until each configuration exists and holds the CA (a helm install
// creates the configurations after the Deployment), then looks again every Interval and puts
// the CA back if something removed it: a `kubectl replace`, a GitOps tool syncing with
// Replace=true, or the one upgrade from a chart that rendered a caBundle itself (its three-way
// merge removes the field). A configuration that already holds the CA is not written; a look
// is two GETs.
type CABundleInjector struct {
	Client client.Client
	// Names of the webhook configurations.
	Names []string
	CA    []byte
	// RetryInterval (default 2s) until all are done, Interval (default 1m) after.
	RetryInterval, Interval time.Duration
	Log                     logr.Logger
}

// NeedLeaderElection: every replica serves the webhook, and any may put its CA in place.
func (i *CABundleInjector) NeedLeaderElection() bool { return false }

// Start injects until ctx is done.
func (i *CABundleInjector) Start(ctx context.Context) error {
	retry, every := i.RetryInterval, i.Interval
	if retry <= 0 {
		retry = 2 * time.Second
	}
	if every <= 0 {
		every = time.Minute
	}
	reported := map[string]bool{}
	for {
		wait := every
		for _, name := range i.Names {
			written, err := i.Inject(ctx, name)
			switch {
			case err != nil:
				wait = retry
				if !reported[name] {
					i.Log.Info("cannot put the webhook CA in place yet; trying again", "configuration", name, "error", err.Error())
					reported[name] = true
				}
			case written:
				reported[name] = false
				i.Log.Info("webhook CA put in place", "configuration", name)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// Inject puts the CA into configuration name now; written says whether it had to.
func (i *CABundleInjector) Inject(ctx context.Context, name string) (written bool, err error) {
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	err = i.Client.Get(ctx, types.NamespacedName{Name: name}, &v)
	if err == nil {
		var bundles [][]byte
		for _, w := range v.Webhooks {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
		return i.patch(ctx, &v, webhookNames(v.Webhooks, nil), bundles)
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", name, err)
	}
	var m admissionregistrationv1.MutatingWebhookConfiguration
	if err := i.Client.Get(ctx, types.NamespacedName{Name: name}, &m); err != nil {
		return false, fmt.Errorf("reading the webhook configuration %s: %w", name, err)
	}
	var bundles [][]byte
	for _, w := range m.Webhooks {
		bundles = append(bundles, w.ClientConfig.CABundle)
	}
	return i.patch(ctx, &m, webhookNames(nil, m.Webhooks), bundles)
}

func webhookNames(v []admissionregistrationv1.ValidatingWebhook, m []admissionregistrationv1.MutatingWebhook) []string {
	var out []string
	for _, w := range v {
		out = append(out, w.Name)
	}
	for _, w := range m {
		out = append(out, w.Name)
	}
	return out
}

// patch sets every webhook's caBundle with a strategic merge patch keyed by the webhooks' names
// (the API's merge key: a merge patch would replace the whole list), so nothing else changes;
// it carries the resourceVersion read, so a concurrent change is never overwritten.
func (i *CABundleInjector) patch(ctx context.Context, obj client.Object, names []string, bundles [][]byte) (bool, error) {
	same := true
	for _, b := range bundles {
		same = same && bytes.Equal(b, i.CA)
	}
	if same {
		return false, nil
	}
	hooks := make([]map[string]any, 0, len(names))
	for _, n := range names {
		hooks = append(hooks, map[string]any{"name": n, "clientConfig": map[string]any{"caBundle": i.CA}})
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": obj.GetResourceVersion()}, "webhooks": hooks})
	if err != nil {
		return false, err
	}
	if err := i.Client.Patch(ctx, obj, client.RawPatch(types.StrategicMergePatchType, data), client.FieldOwner("kustos")); err != nil {
		return false, fmt.Errorf("writing the caBundle of %s: %w", obj.GetName(), err)
	}
	return true, nil
}
