package reservation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/reservationutil"
)

// choice is how one pod relates to one node's reservations.
type choice struct {
	// use is the reservation the pod would consume there: usable by it and
	// with room for it, the fullest such (least left after the pod); failing
	// that, an Aligned one with something left, the pod taking the rest
	// (excessMilliCPU, excessMemory) from the node.
	use                          *View
	excessMilliCPU, excessMemory int64
	// heldMilliCPU and heldMemory are what the node's other reservations hold
	// and the pod may not take.
	heldMilliCPU, heldMemory int64
	// refused says why reservations the pod owns could not take it.
	refused []string
}

// choose relates pod to views. A placeholder (a reservation being scheduled)
// consumes none: every reservation on the node is held against it.
// reqMilliCPU and reqMemory are req's CPU and memory, worked out once per
// cycle by the caller.
func choose(views []View, pod *corev1.Pod, req corev1.ResourceList, reqMilliCPU, reqMemory int64, affinity *extension.ReservationAffinity, placeholder bool, m ownerMatcher) choice {
	var c choice
	var bestLeft int64
	var partial *View // the Aligned reservation covering most of the pod
	// The pod's own label, read once rather than for every reservation it owns.
	ignored := ""
	if !placeholder {
		ignored = reservationutil.IgnoredReason(pod)
	}
	for i := range views {
		v := &views[i]
		// Most pods own none of a node's reservations: settle those before
		// the other checks, whose reasons (formatted strings) only owners
		// need.
		if !placeholder && m.match(&v.owners, pod) {
			ok, why := false, ignored
			if ignored == "" {
				if affinity == nil && v.open {
					ok = true
				} else {
					ok, why = reservationutil.UsableByOwner(v.Reservation, pod, affinity)
				}
			}
			if ok {
				if short := v.shortFor(req, reqMilliCPU, reqMemory); short == "" {
					left := v.remMilliCPU
					if v.holdsCPU {
						left -= reqMilliCPU
					}
					if c.use == nil || left < bestLeft {
						if c.use != nil {
							c.hold(c.use)
						}
						c.use, bestLeft = v, left
						continue
					}
				} else if v.aligned() && v.remMilliCPU+v.remMemory > 0 {
					if partial == nil || v.remMilliCPU > partial.remMilliCPU {
						if partial != nil {
							c.hold(partial)
						}
						partial = v
						continue
					}
				} else {
					why = fmt.Sprintf("reservation %s has %s", v.Reservation.Name, short)
				}
			}
			if why != "" {
				c.refused = append(c.refused, why)
			}
		}
		c.hold(v)
	}
	if partial != nil {
		if c.use != nil {
			c.hold(partial)
		} else {
			c.use = partial
			if partial.holdsCPU {
				c.excessMilliCPU = max(reqMilliCPU-partial.remMilliCPU, 0)
			} else {
				c.excessMilliCPU = reqMilliCPU
			}
			if partial.holdsMemory {
				c.excessMemory = max(reqMemory-partial.remMemory, 0)
			} else {
				c.excessMemory = reqMemory
			}
		}
	}
	return c
}

// aligned says whether owners may take what the reservation has left and
// the rest of their requests from the node (allocatePolicy Aligned or empty).
func (v *View) aligned() bool {
	return v.Reservation.Spec.AllocatePolicy.IsAligned()
}

func (c *choice) hold(v *View) {
	c.heldMilliCPU += v.remMilliCPU
	c.heldMemory += v.remMemory
}

// shortFor names the first resource the reservation holds that it has too
// little of left for a pod requesting req, "" when it has room.
func (v *View) shortFor(req corev1.ResourceList, reqMilliCPU, reqMemory int64) string {
	if v.holdsCPU && reqMilliCPU > v.remMilliCPU {
		l := v.Remaining[corev1.ResourceCPU]
		return fmt.Sprintf("%s cpu left, the pod needs %dm", l.String(), reqMilliCPU)
	}
	if v.holdsMemory && reqMemory > v.remMemory {
		l := v.Remaining[corev1.ResourceMemory]
		return fmt.Sprintf("%s memory left, the pod needs %d", l.String(), reqMemory)
	}
	if !v.holdsOthers {
		return ""
	}
	for name, q := range req {
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory || q.IsZero() {
			continue
		}
		if l, held := v.Remaining[name]; held && q.Cmp(l) > 0 {
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
