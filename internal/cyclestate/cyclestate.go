// Package cyclestate finds what a plugin's PreFilter wrote into the
// scheduling cycle in progress without reading the cycle state: Filter and
// Score run for every node, and CycleState.Read, a sync.Map lookup by string
// key, cost about 50 ns a call per node and plugin in the whole-scheduler
// benchmark, a tenth of a Koord plugin's Filter there.
//
// The framework runs a profile's scheduling cycles one at a time, each
// starting with PreFilter, which writes the plugin's data: the cycle state
// PreFilter wrote into last is the one Filter and Score are handed, except in
// the cycle states the framework clones (preemption's dry runs, nominated
// pods), where a PreFilterExtensions may have changed the data; those are
// other objects, and are read as before.
package cyclestate

import (
	"sync/atomic"

	fwk "k8s.io/kube-scheduler/framework"
)

// Latest remembers what one plugin's PreFilter wrote into the latest cycle
// state. The zero value is ready.
type Latest[T any] struct {
	p atomic.Pointer[written[T]]
}

type written[T any] struct {
	// cs is kept alive by this reference, so no later cycle state can
	// have its address.
	cs fwk.CycleState
	v  T
}

// Wrote records that PreFilter wrote v into cs; call it beside cs.Write.
func (l *Latest[T]) Wrote(cs fwk.CycleState, v T) {
	l.p.Store(&written[T]{cs: cs, v: v})
}

// In is what PreFilter wrote into cs when cs is the cycle state it wrote into
// last; otherwise false, and the caller reads cs.
func (l *Latest[T]) In(cs fwk.CycleState) (T, bool) {
	if w := l.p.Load(); w != nil && w.cs == cs {
		return w.v, true
	}
	var zero T
	return zero, false
}
