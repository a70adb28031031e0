// Package frameworkext is what Koord's scheduler plugins share, and nothing
// else: one informer factory for Koord's CRDs (NodeMetric, Reservation, and
// those to come), the reservation holds contract (holds.go: what the
// Reservation plugin tells the others a node's reservations hold against a
// pod), the binding that carries Koord's annotations (binding.go), and the
// bookkeeping of pods a plugin turned away (rejected.go). Each plugin keeps
// its own state in its own package.
//
// koord-scheduler makes one Extender and hands it to every Koord plugin
// explicitly: the registry's factories are Extender.Factory(plugin.New), so
// a plugin's constructor takes it as an argument.
package frameworkext

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	koordclientset "github.com/koord-project/koord/pkg/client/clientset/versioned"
	koordinformers "github.com/koord-project/koord/pkg/client/informers/externalversions"
	"github.com/koord-project/koord/pkg/client/koordclient"
)

// Extender is shared by the Koord plugins of every profile of one scheduler.
type Extender struct {
	mu      sync.Mutex
	koord   koordclientset.Interface
	factory koordinformers.SharedInformerFactory
	// binders are the plugins whose Bind carries Koord's annotations.
	binders map[string]bool
	// holdsChanged are called when what reservations hold may have dropped.
	holdsChanged []func()
}

// NewExtender is an extender whose Koord client is made from the first
// plugin's framework handle (the scheduler's own client config).
func NewExtender() *Extender { return &Extender{binders: map[string]bool{}} }

// NewExtenderWithClient is an extender on a given client (tests: a fake).
func NewExtenderWithClient(c koordclientset.Interface) *Extender {
	e := NewExtender()
	e.koord = c
	return e
}

// PluginFactory is a Koord plugin's constructor: the framework's, with the
// extender.
type PluginFactory func(ctx context.Context, args runtime.Object, h fwk.Handle, ext *Extender) (fwk.Plugin, error)

// Factory is f as the framework's registry takes it.
func (e *Extender) Factory(f PluginFactory) frameworkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return f(ctx, args, h, e)
	}
}

// Koord is the Koord CRD clientset, made on first use from h's config
// (every profile's handle has the same one).
func (e *Extender) Koord(h fwk.Handle) (koordclientset.Interface, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.koordLocked(h)
}

func (e *Extender) koordLocked(h fwk.Handle) (koordclientset.Interface, error) {
	if e.koord == nil {
		c, err := koordclient.New(h.KubeConfig())
		if err != nil {
			return nil, err
		}
		e.koord = c
	}
	return e.koord, nil
}

// Informers is the one informer factory for Koord's CRDs. Plugins ask it for
// the informers they need in their constructor, then call Start.
func (e *Extender) Informers(h fwk.Handle) (koordinformers.SharedInformerFactory, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.factory == nil {
		c, err := e.koordLocked(h)
		if err != nil {
			return nil, err
		}
		e.factory = koordinformers.NewSharedInformerFactory(c, 0)
	}
	return e.factory, nil
}

// Start starts the informers asked for so far, until ctx ends (the context
// the framework gave the plugin's constructor, which ends with the
// scheduler). Starting again starts only those asked for since.
func (e *Extender) Start(ctx context.Context) {
	e.mu.Lock()
	f := e.factory
	e.mu.Unlock()
	if f != nil {
		f.Start(ctx.Done())
	}
}

// OnHoldsChanged registers f to be called whenever what the node's
// reservations hold may have dropped (one consumed, ended, deleted): a
// plugin that turned pods away for want of room then lets them try again.
func (e *Extender) OnHoldsChanged(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.holdsChanged = append(e.holdsChanged, f)
}

// HoldsChanged tells the plugins registered with OnHoldsChanged (the
// Reservation plugin calls it).
func (e *Extender) HoldsChanged() {
	e.mu.Lock()
	fs := e.holdsChanged
	e.mu.Unlock()
	for _, f := range fs {
		f()
	}
}
