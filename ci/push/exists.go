package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Found is a reference that already exists in the registry.
type Found struct {
	Ref    string
	Digest string
	Size   int64 // of the manifest or index itself
}

// Existing asks the registry (an OCI HEAD of each manifest) which of refs (name:tag, relative to
// registry: "flux-keygen:1.2.3", "charts/minicluster:1.2.3") already exist. A 404 (unknown tag or
// repository) means absent; any other failure is an error, so that an unreachable registry is
// never taken for an empty one.
func Existing(ctx context.Context, registry string, insecure bool, refs []string) ([]Found, error) {
	prefix, nameOpts, err := Target(registry, insecure)
	if err != nil {
		return nil, err
	}
	var found []Found
	for _, r := range refs {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !strings.Contains(r, ":") || strings.Contains(r, "@") {
			return found, fmt.Errorf("%q: give name:tag relative to the registry (e.g. flux-keygen:1.2.3)", r)
		}
		tag, err := name.NewTag(prefix+"/"+r, append([]name.Option{name.StrictValidation}, nameOpts...)...)
		if err != nil {
			return found, fmt.Errorf("%q: %w", r, err)
		}
		desc, err := remote.Head(tag, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithUserAgent("minicluster-push"))
		var terr *transport.Error
		switch {
		case err == nil:
			found = append(found, Found{Ref: tag.String(), Digest: desc.Digest.String(), Size: desc.Size})
		case errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound:
		default:
			return found, fmt.Errorf("checking %s (HTTP HEAD): %w", tag, err)
		}
	}
	return found, nil
}
