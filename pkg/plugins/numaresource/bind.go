package numaresource

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/reservationutil"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// PreBindPreFlight skips PreBind for pods that bind no CPUs, and for all
// pods when the CPUs ride on the Binding (see Bind).
func (p *Plugin) PreBindPreFlight(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if _, err := cs.Read(reservedKey); err != nil || p.binding.Carried(p.ext, p.handle) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &fwk.PreBindPreFlightResult{AllowParallel: true}, nil
}

// Bind binds the pod with its resource-status (and whatever other Koord
// plugins recorded) in one write; pods that bind no CPUs go on to the next
// binder. Only in effect where this plugin comes before DefaultBinder in the
// profile's bind list.
func (p *Plugin) Bind(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	return frameworkext.Bind(ctx, p.handle, cs, pod, nodeName)
}

// PostBind lets go of a reservation's placeholder: the Reservation plugin's
// Bind has just made the CPUs chosen for it the reservation's own, which
// holds them from then on (through frameworkext.Holds); the placeholder itself
// never runs.
func (p *Plugin) PostBind(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) {
	if reservationutil.PlaceholderOf(pod) == "" {
		return
	}
	if _, err := cs.Read(reservedKey); err == nil {
		p.state.Forget(pod.UID)
	}
}

// PreBind writes the chosen CPUs on the pod for koordlet, before the pod is
// bound, so that a bound pod always says which CPUs it holds: in profiles
// whose first binder is DefaultBinder. Otherwise Bind carries them.
func (p *Plugin) PreBind(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	d, err := cs.Read(reservedKey)
	if err != nil || p.binding.Carried(p.ext, p.handle) {
		return nil
	}
	r := d.(*reserved)
	if s := p.stillAssumed(pod, r.alloc); s != nil {
		return s
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{extension.AnnotationResourceStatus: r.status}}})
	if err != nil {
		return fwk.AsStatus(err)
	}
	if _, err := p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fwk.AsStatus(fmt.Errorf("writing annotation %s: %w", extension.AnnotationResourceStatus, err))
	}
	return nil
}

// stillAssumed refuses the binding if the CPUs Reserve held for pod were
// bound to another pod meanwhile.
func (p *Plugin) stillAssumed(pod *corev1.Pod, alloc Allocation) *fwk.Status {
	if !p.state.StillAssumed(pod.UID) {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("CPUs %s were bound to another pod meanwhile", alloc.CPUs))
	}
	return nil
}
