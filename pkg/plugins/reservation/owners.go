package reservation

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/koord-project/koord/pkg/reservationutil"
)

// unkeyLocked takes e's owner keys out of the counts.
func (c *Cache) unkeyLocked(e *entry) {
	for _, k := range e.keys {
		if delete(c.ownerKeys[k], e); len(c.ownerKeys[k]) == 0 {
			delete(c.ownerKeys, k)
		}
	}
	delete(c.keyless, e)
	e.keys, e.keyless = nil, false
}

// ownership is what Cache.Owned found for one pod: the owners specs its keys
// index, each matched once, with the result. Matching depends on the spec
// and the pod only, so an answer holds for good; a spec not among them
// (one added since) is matched when met.
type ownership struct {
	answers []ownerAnswer
}

type ownerAnswer struct {
	owners  reservationutil.Owners // a copy: an entry's owners are replaced when its spec changes
	matched bool
}

// answer is the pod's known answer for o's spec.
func (o *ownership) answer(owners *reservationutil.Owners) (matched, known bool) {
	for i := range o.answers {
		if o.answers[i].owners.SameAs(*owners) {
			return o.answers[i].matched, true
		}
	}
	return false, false
}

// Owned matches pod against the owners of the reservations its keys index
// (and those whose owners have no key), each spec once; nil when it owns
// none of them: the pod is then a stranger to every node's reservations,
// which Filter needs not match at all. The index spares an owner pod being
// matched against the reservations of every node it is filtered on.
func (c *Cache) Owned(pod *corev1.Pod) *ownership {
	keys := reservationutil.PodKeys(pod)
	c.mu.RLock()
	defer c.mu.RUnlock()
	o := &ownership{}
	owns := false
	check := func(e *entry) {
		matched, known := o.answer(&e.owners)
		if !known {
			matched = e.owners.Match(pod)
			o.answers = append(o.answers, ownerAnswer{owners: e.owners, matched: matched})
		}
		owns = owns || matched
	}
	for e := range c.keyless {
		check(e)
	}
	for _, k := range keys {
		for e := range c.ownerKeys[k] {
			check(e)
		}
	}
	if !owns {
		return nil
	}
	return o
}

// ownerMatcher matches one pod against a node's reservations, each distinct
// owners spec once: the reservations of one workload share theirs. Its zero
// value matches; one with known first takes the answers PreFilter worked
// out (Cache.Owned).
type ownerMatcher struct {
	known   *ownership
	last    *reservationutil.Owners
	matched bool
}

func (m *ownerMatcher) match(o *reservationutil.Owners, pod *corev1.Pod) bool {
	if m.last != nil && o.SameAs(*m.last) {
		return m.matched
	}
	m.last = o
	if m.known == nil {
		m.matched = o.Match(pod)
	} else if matched, ok := m.known.answer(o); ok {
		m.matched = matched
	} else {
		m.matched = o.Match(pod)
	}
	return m.matched
}
