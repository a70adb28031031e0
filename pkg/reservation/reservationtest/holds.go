// Package reservationtest gives plugin unit tests a reservation.Holds that
// says what the Reservation plugin would, without running it.
package reservationtest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/pkg/reservation"
)

// Holds is one pod's view: on Node (every node when empty) it would consume
// Use and Held is held against it; other nodes hold nothing.
type Holds struct {
	Node   string
	Use    *reservation.Hold
	HeldBy []reservation.Hold
}

var _ reservation.Holds = &Holds{}

func (h *Holds) Clone() fwk.StateData { return h }

func (h *Holds) On(node *corev1.Node) (*reservation.Hold, []reservation.Hold) {
	if h.Node != "" && node.Name != h.Node {
		return nil, nil
	}
	return h.Use, h.HeldBy
}

func (h *Holds) Most() (milliCPU, memory int64, pinned bool) {
	milliCPU, memory = h.Held(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.Node}})
	pinned = h.Use != nil && h.Use.Pinned()
	for i := range h.HeldBy {
		pinned = pinned || h.HeldBy[i].Pinned()
	}
	return milliCPU, memory, pinned
}

func (h *Holds) Held(node *corev1.Node) (milliCPU, memory int64) {
	_, held := h.On(node)
	for _, x := range held {
		milliCPU, memory = milliCPU+x.MilliCPU, memory+x.Memory
	}
	return milliCPU, memory
}
