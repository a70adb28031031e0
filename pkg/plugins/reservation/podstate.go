package reservation

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// podState is what PreFilter learns once per pod.
type podState struct {
	pod         *corev1.Pod
	cache       *Cache
	affinity    *extension.ReservationAffinity
	required    bool
	placeholder bool
	// owned is which owners specs the pod matches (Cache.Owned), nil when
	// it owns no reservation anywhere or is a placeholder: every node's
	// reservations are then simply held against it.
	owned       *ownership
	req         corev1.ResourceList
	reqMilliCPU int64
	reqMemory   int64
	// reserved is the reservation Reserve took for the pod, on reservedNode.
	reserved     *schedulingv1alpha1.Reservation
	reservedNode string
	// annotated is set once PreBind wrote reservation-allocated.
	annotated bool
	// turnedAway is set when Filter first turns the pod away in this cycle
	// (shared by clones): it is then remembered once, not once per node.
	turnedAway *atomic.Bool
	// choices are an owner's relation to each node's reservations, by
	// node name: this plugin's Filter and Score and the other plugins'
	// Holds.On all need it, for every node, in one cycle. Shared by
	// clones: it depends on the pod and the reservations only.
	choices *sync.Map
}

func (s *podState) Clone() fwk.StateData { c := *s; return &c }

// nodeChoice is how the pod relates to one node's reservations.
type nodeChoice struct {
	views []View
	c     choice
	// use and held are c as the other plugins see it (read-only), made
	// when one first asks.
	once sync.Once
	use  *frameworkext.Hold
	held []frameworkext.Hold
}

// on is the pod's choice on node, nil when the node holds no reservation.
// A pod that owns none of the node's reservations shares the cache's
// summary (no work, no allocation); an owner's choice is worked out once per
// cycle and node.
func (s *podState) on(node *corev1.Node) *nodeChoice {
	sum := s.cache.summary(node.Name)
	if sum == nil {
		return nil
	}
	if s.owned == nil {
		return sum.stranger
	}
	if prev, ok := s.choices.Load(node.Name); ok {
		return prev.(*nodeChoice)
	}
	m := ownerMatcher{known: s.owned}
	if !sum.owns(s.pod, m) {
		return sum.stranger
	}
	c := choose(sum.views, s.pod, s.req, s.reqMilliCPU, s.reqMemory, s.affinity, s.placeholder, m)
	// Another goroutine of this cycle may have got there first: all take its.
	n, _ := s.choices.LoadOrStore(node.Name, &nodeChoice{views: sum.views, c: c})
	return n.(*nodeChoice)
}

func (p *Plugin) getState(cs fwk.CycleState) *podState {
	v, err := cs.Read(stateKey)
	if err != nil {
		return nil
	}
	s, _ := v.(*podState)
	return s
}
