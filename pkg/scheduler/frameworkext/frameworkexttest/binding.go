// Package frameworkexttest helps unit tests of Koord's plugins: a
// framework handle with a fake clientset and a bind list, what that
// clientset was sent, and a reservation Holds without the Reservation plugin.
package frameworkexttest

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// Handle is the part of a framework handle Koord's plugins use in unit
// tests: the clientset, no API dispatcher, the profile's bind list (none:
// DefaultBinder alone, so Extender.Carried is false), and the pods
// activated. Embed it to add more.
type Handle struct {
	fwk.Handle
	Client *fake.Clientset
	Bind   []string

	mu        sync.Mutex
	activated []string
}

func (h *Handle) ClientSet() kubernetes.Interface { return h.Client }
func (h *Handle) APICacher() fwk.APICacher        { return nil }
func (h *Handle) ListPlugins() *config.Plugins    { return Plugins(h.Bind...) }

// Activate records the pods sent back to the active queue.
func (h *Handle) Activate(_ klog.Logger, pods map[string]*corev1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for key := range pods {
		h.activated = append(h.activated, key)
	}
	sort.Strings(h.activated)
}

// Activated lists the pods (namespace/name) Activate was given so far.
func (h *Handle) Activated() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.activated...)
}

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
