// Package koordclient builds the Koord CRD clientset plugins use, from the
// scheduler's own client config.
package koordclient

import (
	"k8s.io/client-go/rest"

	koordclientset "github.com/koord-project/koord/pkg/client/clientset/versioned"
)

// New returns a Koord clientset. CRDs are served as JSON only, while the
// scheduler's config asks for protobuf.
func New(cfg *rest.Config) (koordclientset.Interface, error) {
	return koordclientset.NewForConfig(JSON(cfg))
}

// JSON is cfg speaking JSON: custom resources have no protobuf encoding, and
// the scheduler's loopback config asks for protobuf.
func JSON(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	return c
}
