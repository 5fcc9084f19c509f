package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

type pushOptions struct {
	Layout, Ref, DigestFile string
}

// push copies the layout's index (both platforms, every blob) to o.Ref: REGISTRY/REPOSITORY:TAG
// pushes that one tag (the release workflow), REGISTRY/REPOSITORY every tag the layout names
// (`make image` names it by the chart's appVersion and the version, so that the chart pulls it
// without a tag of its own). It prints each REFERENCE@DIGEST pushed. Credentials come from
// REGISTRY_USERNAME and REGISTRY_PASSWORD (the release workflow: the actor and GITHUB_TOKEN),
// else from the Docker config's keychain.
func push(ctx context.Context, o pushOptions, stdout io.Writer) error {
	if o.Ref == "" {
		return errors.New("--ref is required, e.g. ghcr.io/kustos-dev/kustos (every tag of the layout) or ghcr.io/kustos-dev/kustos:0.1.0")
	}
	if strings.Contains(o.Ref, "@") {
		return fmt.Errorf("--ref=%q: want REGISTRY/REPOSITORY[:TAG], not a digest", o.Ref)
	}
	idx, layoutTags, err := openLayout(o.Layout)
	if err != nil {
		return err
	}
	var refs []name.Tag
	if tag, err := name.NewTag(o.Ref, name.StrictValidation); err == nil {
		refs = append(refs, tag)
	} else {
		repo, rerr := name.NewRepository(o.Ref, name.StrictValidation)
		if rerr != nil {
			return fmt.Errorf("--ref=%q: want REGISTRY/REPOSITORY[:TAG]: %w", o.Ref, rerr)
		}
		if len(layoutTags) == 0 {
			return fmt.Errorf("%s names no tag; give --ref a tag (REGISTRY/REPOSITORY:TAG)", o.Layout)
		}
		for _, t := range layoutTags {
			refs = append(refs, repo.Tag(t))
		}
	}
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	if pw := os.Getenv("REGISTRY_PASSWORD"); pw != "" {
		auth = remote.WithAuth(authn.FromConfig(authn.AuthConfig{Username: os.Getenv("REGISTRY_USERNAME"), Password: pw}))
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), auth); err != nil {
			return fmt.Errorf("pushing to %s: %w", ref, err)
		}
		fmt.Fprintf(stdout, "%s@%s\n", ref, d)
	}
	if o.DigestFile != "" {
		return os.WriteFile(o.DigestFile, []byte(d.String()+"\n"), 0o600)
	}
	return nil
}
