package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

type pushOptions struct {
	Layout, Ref, DigestFile string
}

// push copies the layout's index (both platforms, every blob) to o.Ref. Credentials come from
// REGISTRY_USERNAME and REGISTRY_PASSWORD (the release workflow: the actor and GITHUB_TOKEN),
// else from the Docker config's keychain.
func push(ctx context.Context, o pushOptions, stdout io.Writer) error {
	if o.Ref == "" {
		return errors.New("--ref is required, e.g. ghcr.io/kustos-dev/kustos:v0.2.0")
	}
	ref, err := name.NewTag(o.Ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("--ref=%q: want REGISTRY/REPOSITORY:TAG: %w", o.Ref, err)
	}
	idx, err := openIndex(o.Layout)
	if err != nil {
		return err
	}
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	if pw := os.Getenv("REGISTRY_PASSWORD"); pw != "" {
		auth = remote.WithAuth(authn.FromConfig(authn.AuthConfig{Username: os.Getenv("REGISTRY_USERNAME"), Password: pw}))
	}
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), auth); err != nil {
		return fmt.Errorf("pushing to %s: %w", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s@%s\n", ref.Context(), d)
	if o.DigestFile != "" {
		return os.WriteFile(o.DigestFile, []byte(d.String()+"\n"), 0o600)
	}
	return nil
}
