package authorship

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/keyring"
)

// ReadSigner reads the stamps' key of --cleaner-author-key-file (file) or, created once if
// absent, --cleaner-author-key-secret (secret, through c); nil when neither is set. Its errors
// name the flag.
func ReadSigner(ctx context.Context, c client.Client, file, secret string) (*Signer, error) {
	key, flag, err := keyring.ReadFlags(ctx, c, "cleaner-author-key", file, secret)
	if key == nil || err != nil {
		return nil, err
	}
	s, err := NewSigner(key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return s, nil
}
