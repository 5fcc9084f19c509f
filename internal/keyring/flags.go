package keyring

import (
	"context"
	"fmt"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SecretKeyField is the field of a --…-key-secret Secret that holds the key.
const SecretKeyField = "key"

// ReadFlags reads the key of --<flag>-file or, created if absent, of --<flag>-secret
// (namespace/name, the field SecretKeyField); nil when neither is set. It returns the flag it
// read, as "--flag=value", for errors.
func ReadFlags(ctx context.Context, c client.Client, flag, file, secret string) ([]byte, string, error) {
	switch {
	case file != "" && secret != "":
		return nil, "", fmt.Errorf("--%s-file and --%s-secret: give one", flag, flag)
	case file != "":
		key, err := os.ReadFile(file)
		if err != nil {
			return nil, "", fmt.Errorf("--%s-file: %w", flag, err)
		}
		return key, fmt.Sprintf("--%s-file=%s", flag, file), nil
	case secret != "":
		name, err := ParseName(secret)
		if err != nil {
			return nil, "", fmt.Errorf("--%s-secret: %w", flag, err)
		}
		key, err := Key(ctx, c, name, SecretKeyField)
		if err != nil {
			return nil, "", fmt.Errorf("--%s-secret: %w", flag, err)
		}
		return key, fmt.Sprintf("--%s-secret=%s", flag, secret), nil
	}
	return nil, "", nil
}
