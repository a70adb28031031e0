// Package podbindingtest helps unit tests of plugins that bind with
// podbinding: a plugin list for a fake handle, and the Bindings a fake
// clientset was sent.
package podbindingtest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// Plugins is a profile whose bind list is bind, in order: what a fake
// handle's ListPlugins returns.
func Plugins(bind ...string) *config.Plugins {
	p := &config.Plugins{}
	for _, name := range bind {
		p.Bind.Enabled = append(p.Bind.Enabled, config.Plugin{Name: name})
	}
	return p
}

// Sent is every Binding client was sent, in order.
func Sent(client *fake.Clientset) []*corev1.Binding {
	var out []*corev1.Binding
	for _, a := range client.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetSubresource() == "binding" {
			if b, ok := c.GetObject().(*corev1.Binding); ok {
				out = append(out, b)
			}
		}
	}
	return out
}

// Patches counts the patches client was sent for pods.
func Patches(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "pods" {
			n++
		}
	}
	return n
}
