package frameworkexttest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// Holds is a frameworkext.Holds that says what the Reservation plugin would
// for one pod, without running it: on Node (every node when empty) the pod
// would consume Use, and HeldBy is held against it; other nodes hold nothing.
type Holds struct {
	Node   string
	Use    *frameworkext.Hold
	HeldBy []frameworkext.Hold
}

var _ frameworkext.Holds = &Holds{}

func (h *Holds) Clone() fwk.StateData { return h }

func (h *Holds) On(node *corev1.Node) (*frameworkext.Hold, []frameworkext.Hold) {
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
