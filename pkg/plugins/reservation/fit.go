package reservation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/reservation"
)

// choice is how one pod relates to one node's reservations.
type choice struct {
	// use is the reservation the pod would consume there: usable by it and
	// with room for it, the fullest such (least left after the pod).
	use *View
	// heldMilliCPU and heldMemory are what the node's other reservations hold
	// and the pod may not take.
	heldMilliCPU, heldMemory int64
	// refused says why reservations the pod owns could not take it.
	refused []string
}

// choose relates pod to views. A placeholder (a reservation being scheduled)
// consumes none: every reservation on the node is held against it.
func choose(views []View, pod *corev1.Pod, req corev1.ResourceList, affinity *extension.ReservationAffinity, placeholder bool) choice {
	var c choice
	var bestLeft int64
	for i := range views {
		v := &views[i]
		if !placeholder {
			ok, why := reservation.UsableBy(v.Reservation, v.owners, pod, affinity)
			if ok {
				alloc := reservation.AllocationOf(v.Allocatable, req)
				if short := shortOf(v.Remaining, alloc); short == "" {
					left := v.Remaining.Cpu().MilliValue() - alloc.Cpu().MilliValue()
					if c.use == nil || left < bestLeft {
						if c.use != nil {
							c.hold(c.use)
						}
						c.use, bestLeft = v, left
						continue
					}
				} else {
					why = fmt.Sprintf("reservation %s has %s", v.Reservation.Name, short)
				}
			}
			if why != "" && v.owners.Match(pod) {
				c.refused = append(c.refused, why)
			}
		}
		c.hold(v)
	}
	return c
}

func (c *choice) hold(v *View) {
	c.heldMilliCPU += v.Remaining.Cpu().MilliValue()
	c.heldMemory += v.Remaining.Memory().Value()
}

// shortOf names the first resource of want that left cannot cover, "" when it covers all.
func shortOf(left, want corev1.ResourceList) string {
	for name, q := range want {
		if l := left[name]; q.Cmp(l) > 0 {
			return fmt.Sprintf("%s %s left, the pod needs %s", l.String(), name, q.String())
		}
	}
	return ""
}

// fitsBeside checks a pod that consumes no reservation against what the node
// has free once the reservations it may not use are counted as used.
// NodeResourcesFit has already checked it without them.
func fitsBeside(freeMilliCPU, freeMemory int64, c choice, reqMilliCPU, reqMemory int64) (bool, string) {
	if c.heldMilliCPU > 0 && reqMilliCPU > freeMilliCPU-c.heldMilliCPU {
		return false, fmt.Sprintf("reservations hold %dm of the node's %dm free CPU, the pod needs %dm", c.heldMilliCPU, max(freeMilliCPU, 0), reqMilliCPU)
	}
	if c.heldMemory > 0 && reqMemory > freeMemory-c.heldMemory {
		return false, fmt.Sprintf("reservations hold %d of the node's %d bytes of free memory, the pod needs %d", c.heldMemory, max(freeMemory, 0), reqMemory)
	}
	return true, ""
}

// requiredReason is why a pod whose affinity requires a reservation cannot use any on a node.
func requiredReason(c choice) string {
	if len(c.refused) == 0 {
		return fmt.Sprintf("annotation %s requires a reservation, and no reservation on the node matches", extension.AnnotationReservationAffinity)
	}
	return fmt.Sprintf("annotation %s requires a reservation: %s", extension.AnnotationReservationAffinity, strings.Join(c.refused, "; "))
}
