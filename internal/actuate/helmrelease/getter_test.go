package helmrelease

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The rest of genericclioptions.RESTClientGetter, for helm's action package in the tests.

// ToRESTConfig returns a copy: helm's action package adjusts the configs it gets.
func (g *restClientGetter) ToRESTConfig() (*rest.Config, error) {
	return rest.CopyConfig(g.config), nil
}

// ToRawKubeConfigLoader only carries the namespace: helm's action package takes the namespace of the
// objects it builds from it, and nothing reads a kubeconfig file.
func (g *restClientGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{
		Context: clientcmdapi.Context{Namespace: g.namespace},
	})
}
