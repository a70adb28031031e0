package reservationutil

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
)

// Requests is what a reservation holds: the requests of a pod built from its
// template (containers, init containers and overhead, as the scheduler counts them).
func Requests(r *schedulingv1alpha1.Reservation) corev1.ResourceList {
	if r.Spec.Template == nil {
		return corev1.ResourceList{}
	}
	return resourcehelper.PodRequests(&corev1.Pod{Spec: r.Spec.Template.Spec}, resourcehelper.PodResourcesOptions{})
}

// Allocation is what an owner pod takes from a reservation: its requests of
// the resources the reservation holds.
func Allocation(r *schedulingv1alpha1.Reservation, pod *corev1.Pod) corev1.ResourceList {
	held := r.Status.Allocatable
	if held == nil {
		held = Requests(r)
	}
	return AllocationOf(held, resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
}

// AllocationOf is the part of a pod's requests req that a reservation
// holding held can give it.
func AllocationOf(held, req corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range req {
		if _, ok := held[name]; ok && !q.IsZero() {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// Remaining is allocatable − allocated, per resource the reservation holds, never negative.
func Remaining(allocatable, allocated corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range allocatable {
		left := q.DeepCopy()
		if a, ok := allocated[name]; ok {
			left.Sub(a)
		}
		if left.Sign() < 0 {
			left = *resource.NewQuantity(0, q.Format)
		}
		out[name] = left
	}
	return out
}

// Derive computes a reservation's currentOwners and allocated from the pods
// that carry a reservation-allocated annotation naming it (by UID when the
// annotation has one). Pods that finished use nothing and are left out; a
// deleted pod is simply not among pods. This is the only source of truth, so
// the status is right after any restart.
func Derive(r *schedulingv1alpha1.Reservation, pods []*corev1.Pod) ([]corev1.ObjectReference, corev1.ResourceList) {
	var owners []corev1.ObjectReference
	allocated := corev1.ResourceList{}
	for _, p := range pods {
		if !Consumes(p, r) {
			continue
		}
		owners = append(owners, corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID})
		for name, q := range Allocation(r, p) {
			sum := allocated[name]
			sum.Add(q)
			allocated[name] = sum
		}
	}
	if r.Spec.AllocatePolicy.IsAligned() {
		// Aligned owners took the rest of their requests from the node.
		held := r.Status.Allocatable
		if held == nil {
			held = Requests(r)
		}
		for name, q := range allocated {
			if h, ok := held[name]; ok && q.Cmp(h) > 0 {
				allocated[name] = h.DeepCopy()
			}
		}
	}
	sort.Slice(owners, func(i, j int) bool {
		if owners[i].Namespace != owners[j].Namespace {
			return owners[i].Namespace < owners[j].Namespace
		}
		return owners[i].Name < owners[j].Name
	})
	return owners, allocated
}

// Consumes reports whether a live, bound pod's reservation-allocated
// annotation names r and r's spec.owners admit the pod. A malformed
// annotation names nothing, and neither does the annotation of a pod not
// bound (yet, or ever: its binding may have failed after the scheduler wrote
// it). The owners check is what keeps a pod whose creator wrote the
// annotation from taking another tenant's reservation.
func Consumes(p *corev1.Pod, r *schedulingv1alpha1.Reservation) bool {
	return Names(ClaimOf(p), r) && IsOwner(r, p)
}

// ClaimOf is the reservation-allocated annotation of a live, bound pod, nil
// for any other pod (and for a malformed annotation).
func ClaimOf(p *corev1.Pod) *extension.ReservationAllocated {
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return nil
	}
	a, err := extension.GetReservationAllocated(p.Annotations)
	if err != nil {
		return nil
	}
	return a
}

// Names reports whether a claim names r: by name, and by UID when it has one
// (a reservation re-created under the same name is another one).
func Names(a *extension.ReservationAllocated, r *schedulingv1alpha1.Reservation) bool {
	return a != nil && a.Name == r.Name && (a.UID == "" || a.UID == r.UID)
}

// Pinning reads the CPUs and per-NUMA-node memory a reservation was given
// (its resource-status annotation, copied from its placeholder). A
// malformed annotation is an error naming the key.
func Pinning(r *schedulingv1alpha1.Reservation) (cpuset.CPUSet, map[int]int64, error) {
	if _, ok := r.Annotations[extension.AnnotationResourceStatus]; !ok {
		return cpuset.New(), nil, nil
	}
	st, err := extension.GetResourceStatus(r.Annotations)
	if err != nil {
		return cpuset.New(), nil, fmt.Errorf("reservation %s: %w", r.Name, err)
	}
	return st.CPUs(), st.NUMAMemory(), nil
}
