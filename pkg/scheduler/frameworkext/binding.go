package frameworkext

// The binding: a pod is bound together with the annotations Koord plugins
// chose for it (NodeNUMAResource's resource-status, Reservation's
// reservation-allocated), in the one Binding call that sets spec.nodeName.
//
// The Binding subresource copies the Binding's annotations onto the pod in
// the same write as the node name, so a bound pod always carries them, and a
// refused binding leaves none behind. Writing them in PreBind instead costs
// two more API writes per pod (the PreBind patch, and the nominatedNodeName
// patch kube-scheduler makes for any pod whose PreBind has work to do): the
// largest cost Koord's plugins had in a whole-scheduler benchmark.
//
// A plugin records its annotations in Reserve with Add. Plugins that bind
// register with RegisterBinder and implement Bind with Bind below; whichever
// comes first in the profile's bind list sends the Binding with everything
// recorded. A profile whose first binder is none of them (DefaultBinder
// first) makes Carried false, and the plugins fall back to patching in
// PreBind.

import (
	"context"
	"fmt"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// RegisterBinder records that the plugin called name binds with Bind below
// (in its constructor).
func (e *Extender) RegisterBinder(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.binders[name] = true
}

const bindingKey fwk.StateKey = "koord.sh/binding-annotations"

// Check runs just before the Binding is sent; an error refuses the binding.
// NodeNUMAResource checks that the CPUs it chose are still the pod's.
type Check func() *fwk.Status

type pending struct {
	mu          sync.Mutex
	annotations map[string]string
	checks      []Check
}

// Clone shares the record: a cycle state cloned for a later extension point
// belongs to the same pod.
func (p *pending) Clone() fwk.StateData { return p }

func get(cs fwk.CycleState, create bool) *pending {
	if d, err := cs.Read(bindingKey); err == nil {
		if p, ok := d.(*pending); ok {
			return p
		}
	}
	if !create {
		return nil
	}
	// Reserve plugins run one after another, so two cannot both create.
	p := &pending{annotations: map[string]string{}}
	cs.Write(bindingKey, p)
	return p
}

// Add records an annotation for the Binding, with an optional check.
func Add(cs fwk.CycleState, key, value string, check Check) {
	p := get(cs, true)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.annotations[key] = value
	if check != nil {
		p.checks = append(p.checks, check)
	}
}

// Pending is the annotation recorded for key, if any.
func Pending(cs fwk.CycleState, key string) (string, bool) {
	p := get(cs, false)
	if p == nil {
		return "", false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.annotations[key]
	return v, ok
}

// Bind sends the Binding with the recorded annotations. With none recorded
// it returns Skip, and the next binder (DefaultBinder) binds the pod as
// usual.
func Bind(ctx context.Context, h fwk.Handle, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	p := get(cs, false)
	if p == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	p.mu.Lock()
	annotations, checks := maps.Clone(p.annotations), p.checks
	p.mu.Unlock()
	if len(annotations) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	for _, check := range checks {
		if s := check(); !s.IsSuccess() {
			return s
		}
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Annotations: annotations},
		Target:     corev1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	// As DefaultBinder: through the scheduler's API dispatcher when it runs one.
	if c := h.APICacher(); c != nil {
		done, err := c.BindPod(binding)
		if err == nil {
			err = c.WaitOnFinish(ctx, done)
		}
		if err != nil {
			return fwk.AsStatus(err)
		}
		return nil
	}
	klog.FromContext(ctx).V(3).Info("Binding pod with annotations", "pod", klog.KObj(pod), "node", nodeName, "annotations", len(annotations))
	if err := h.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fwk.AsStatus(fmt.Errorf("binding %s/%s to %s: %w", pod.Namespace, pod.Name, nodeName, err))
	}
	return nil
}

// Carried reports whether the profile's first binder is a registered
// binder, so annotations recorded with Add reach the pod with its Binding.
// It needs the framework's plugin list, available once the profile is
// built: call it from the binding cycle, not from New. A handle that cannot
// list its plugins (unit tests' fakes) answers false: the PreBind patch is
// always correct.
func (e *Extender) Carried(h fwk.Handle) bool {
	l, ok := h.(interface{ ListPlugins() *config.Plugins })
	if !ok {
		return false
	}
	plugins := l.ListPlugins()
	if plugins == nil || len(plugins.Bind.Enabled) == 0 {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.binders[plugins.Bind.Enabled[0].Name]
}

// CarriedOnce caches Carried for one plugin instance (one profile): the
// plugin list does not change once the scheduler runs.
type CarriedOnce struct {
	once    sync.Once
	carried bool
}

// Carried is e.Carried(h), worked out once.
func (c *CarriedOnce) Carried(e *Extender, h fwk.Handle) bool {
	c.once.Do(func() { c.carried = e.Carried(h) })
	return c.carried
}
