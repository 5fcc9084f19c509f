package keyring

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ManagedByLabel marks the Secrets Kustos created for itself (value "kustos").
const ManagedByLabel = "app.kubernetes.io/managed-by"

// KeySize is the length of a generated key: 64 characters of URL-safe base64 (384 random bits),
// above the 32 bytes the signers need.
const KeySize = 64

// ErrUnusable: the Secret exists but does not hold what Kustos needs (a key missing or too
// short, a certificate for other names or expired). Kustos never overwrites a Secret it finds;
// the error says what to fix (usually: delete the Secret, and Kustos makes a new one).
var ErrUnusable = errors.New("secret unusable")

// ParseName reads a flag's "namespace/name".
func ParseName(s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("%q: want namespace/name", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// Key returns the key in field of the Secret name, creating the Secret with a random key
// (KeySize characters) when it does not exist. A Secret that exists is used as it is.
func Key(ctx context.Context, c client.Client, name types.NamespacedName, field string) ([]byte, error) {
	data, err := ensure(ctx, c, name, corev1.SecretTypeOpaque, func() (map[string][]byte, error) {
		b := make([]byte, KeySize*3/4)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		return map[string][]byte{field: []byte(base64.RawURLEncoding.EncodeToString(b))}, nil
	})
	if err != nil {
		return nil, err
	}
	key := data[field]
	if len(key) < 32 {
		return nil, fmt.Errorf("secret %s: %q holds %d bytes, want at least 32 (delete the Secret and Kustos makes a new key): %w",
			name, field, len(key), ErrUnusable)
	}
	return key, nil
}

// ensure returns the data of the Secret name, creating it with generate's data first when it does
// not exist. Two callers at once (two replicas starting) both end up with the data of the one
// Secret that was created: the loser's Create fails with AlreadyExists and it reads the winner's.
func ensure(ctx context.Context, c client.Client, name types.NamespacedName, typ corev1.SecretType, generate func() (map[string][]byte, error)) (map[string][]byte, error) {
	var s corev1.Secret
	err := c.Get(ctx, name, &s)
	if err == nil {
		return s.Data, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	data, err := generate()
	if err != nil {
		return nil, fmt.Errorf("making Secret %s: %w", name, err)
	}
	s = corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name, Labels: map[string]string{ManagedByLabel: "kustos"},
			Annotations: map[string]string{"kustos.io/created-by": "Kustos created this Secret once and never changes it; delete it to have a new one made"}},
		Type: typ,
		Data: data,
	}
	err = c.Create(ctx, &s)
	switch {
	case err == nil:
		return data, nil
	case apierrors.IsAlreadyExists(err):
		// Another replica created it in the meantime: use its data, never ours.
		if err := c.Get(ctx, name, &s); err != nil {
			return nil, fmt.Errorf("reading Secret %s (created by another replica): %w", name, err)
		}
		return s.Data, nil
	default:
		return nil, fmt.Errorf("creating Secret %s: %w", name, err)
	}
}
