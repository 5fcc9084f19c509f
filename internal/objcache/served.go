package objcache

import (
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Served are the kinds a detector reads and the flag that names them.
type Served struct {
	Flag  string
	Kinds []schema.GroupVersionKind
}

// CheckServed says which flag names a kind the API server does not serve, before the manager is
// made: its cache has an entry of its own for each kind a detector reads (trimmed, or with all
// its metadata), and controller-runtime's error for an unserved one names neither the flag nor
// the kind. The mapper it read the kinds with (nil when there was nothing to check) is the
// manager's too (MapperProvider), so discovery is not read twice at start.
func CheckServed(cfg *rest.Config, served ...Served) (meta.RESTMapper, error) {
	n := 0
	for _, s := range served {
		n += len(s.Kinds)
	}
	if n == 0 {
		return nil, nil
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's kinds: %w", err)
	}
	for _, s := range served {
		for _, k := range s.Kinds {
			if _, err := mapper.RESTMapping(k.GroupKind(), k.Version); err != nil {
				return nil, fmt.Errorf("%s: %s is not served by the API server: %w", s.Flag, k, err)
			}
		}
	}
	return mapper, nil
}

// MapperProvider gives the manager mapper when there is one, else its default.
func MapperProvider(mapper meta.RESTMapper) func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
	if mapper == nil {
		return apiutil.NewDynamicRESTMapper
	}
	return func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil }
}

// UnstructuredClient is a client of c whose reads, of unstructured objects too, come from
// reader (a cache) instead of the API server; cfg is c's config or a copy (JSON for custom
// resources, which have no protobuf encoding).
func UnstructuredClient(cfg *rest.Config, c cluster.Cluster, reader client.Reader) (client.Client, error) {
	return client.New(cfg, client.Options{Scheme: c.GetScheme(), Mapper: c.GetRESTMapper(), Cache: &client.CacheOptions{Reader: reader, Unstructured: true}})
}
