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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	koordclientset "github.com/koord-project/koord/pkg/client/clientset/versioned"
	koordinformers "github.com/koord-project/koord/pkg/client/informers/externalversions"
	"github.com/koord-project/koord/pkg/client/koordclient"
	"github.com/koord-project/koord/pkg/client/lenient"
)

// SyncTimeout is how long a plugin's constructor waits for the Koord
// informers it needs before it fails, naming them.
const SyncTimeout = 2 * time.Minute

// Extender is shared by the Koord plugins of every profile of one scheduler.
type Extender struct {
	mu      sync.Mutex
	koord   koordclientset.Interface
	factory koordinformers.SharedInformerFactory
	// given is set when the Koord client was given (tests' fakes), not made
	// from a plugin's handle.
	given bool
	// binders are the plugins whose Bind carries Koord's annotations.
	binders map[string]bool
	// holdsChanged are called when what reservations hold may have dropped.
	holdsChanged []func()
	// profiles are the names of the profiles whose plugins the extender
	// made: the schedulerNames of pods this scheduler binds.
	profiles sync.Map
}

// NewExtender is an extender whose Koord client is made from the first
// plugin's framework handle (the scheduler's own client config).
func NewExtender() *Extender { return &Extender{binders: map[string]bool{}} }

// NewExtenderWithClient is an extender on a given client (tests: a fake).
func NewExtenderWithClient(c koordclientset.Interface) *Extender {
	e := NewExtender()
	e.koord, e.given = c, true
	return e
}

// PluginFactory is a Koord plugin's constructor: the framework's, with the
// extender.
type PluginFactory func(ctx context.Context, args runtime.Object, h fwk.Handle, ext *Extender) (fwk.Plugin, error)

// Factory is f as the framework's registry takes it.
func (e *Extender) Factory(f PluginFactory) frameworkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		e.AddProfile(h.ProfileName())
		return f(ctx, args, h, e)
	}
}

// AddProfile records that this scheduler runs a profile of that name
// (Factory does it for every profile with a Koord plugin).
func (e *Extender) AddProfile(name string) { e.profiles.Store(name, true) }

// BoundHere says whether pod is one this scheduler binds: its schedulerName
// is one of the profiles with Koord plugins. What Koord's annotations say
// about CPUs and reservations is the scheduler's own record only on such
// pods; on any other pod (another scheduler's, or one created with
// spec.nodeName set) they are a claim nobody checked, and the plugins
// ignore them.
func (e *Extender) BoundHere(pod *corev1.Pod) bool {
	_, ok := e.profiles.Load(pod.Spec.SchedulerName)
	return ok
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
		if !e.given { // a given client is a test's fake: no dynamic client beside it
			if err := e.installLenient(h); err != nil {
				return nil, err
			}
		}
	}
	return e.factory, nil
}

// installLenient makes the factory's Reservation, NodeMetric, PodGroup and ElasticQuota informers
// decode one object at a time (package lenient): an object that does not
// decode is skipped, logged and reported as an Event, once per version,
// instead of keeping the cache from syncing and every plugin waiting on it.
func (e *Extender) installLenient(h fwk.Handle) error {
	dyn, err := dynamic.NewForConfig(koordclient.JSON(h.KubeConfig()))
	if err != nil {
		return err
	}
	var told sync.Map
	refused := func(u *unstructured.Unstructured, err error) {
		if _, seen := told.LoadOrStore(string(u.GetUID())+"/"+u.GetResourceVersion(), true); seen {
			return
		}
		klog.Background().Error(err, "Ignoring an object that does not decode; fix or delete it", "kind", u.GetKind(), "name", u.GetName())
		if rec := h.EventRecorder(); rec != nil {
			rec.Eventf(u, nil, corev1.EventTypeWarning, "InvalidObject", "Decoding", "koord-scheduler ignores this object: %v", err)
		}
	}
	kinds := map[runtime.Object]lenient.Kind{&schedulingv1alpha1.Reservation{}: lenient.Reservations, &slov1alpha1.NodeMetric{}: lenient.NodeMetrics,
		&schedulingsigsv1alpha1.PodGroup{}: lenient.PodGroups, &schedulingsigsv1alpha1.ElasticQuota{}: lenient.ElasticQuotas}
	for obj, k := range kinds {
		e.factory.InformerFor(obj, func(koordclientset.Interface, time.Duration) cache.SharedIndexInformer {
			return lenient.Informer(dyn, k, nil, refused)
		})
	}
	return nil
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

// Served says whether the API server serves a resource of a group version
// (a CRD that is installed): plugins built on an optional CRD check it
// before waiting on an informer that would never sync.
func Served(h fwk.Handle, groupVersion, resource string) bool {
	list, err := h.ClientSet().Discovery().ServerResourcesForGroupVersion(groupVersion)
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true
		}
	}
	return false
}
