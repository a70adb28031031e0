// Package nodeslots publishes one value per node to readers that take no
// lock: a scheduler plugin's Filter and Score run for every pod on every node
// from many goroutines, and a read lock there costs more than the read itself,
// in cache-line traffic between CPUs.
//
// Writers serialise among themselves (the plugin's own lock); readers see
// each node's latest value. The map of slots is replaced (copied) only when a
// node comes or goes; a value is swapped into its node's slot.
package nodeslots

import (
	"maps"
	"sync/atomic"
	"unique"
)

// Slots holds a *T per node name. The zero value is empty and ready.
type Slots[T any] struct {
	m atomic.Pointer[map[string]*atomic.Pointer[T]]
}

func (s *Slots[T]) current() map[string]*atomic.Pointer[T] {
	if m := s.m.Load(); m != nil {
		return *m
	}
	return nil
}

// Get is node's value, nil when there is none.
func (s *Slots[T]) Get(node string) *T {
	if slot := s.current()[node]; slot != nil {
		return slot.Load()
	}
	return nil
}

// Set publishes v (nil: none) as node's value. Callers hold their writers'
// lock.
func (s *Slots[T]) Set(node string, v *T) {
	if slot := s.current()[node]; slot != nil {
		slot.Store(v)
		return
	}
	slot := &atomic.Pointer[T]{}
	slot.Store(v)
	m := maps.Clone(s.current())
	if m == nil {
		m = map[string]*atomic.Pointer[T]{}
	}
	// Readers compare the key's bytes for every node: the canonical copies
	// of all node names sit together in memory (and are shared by every
	// plugin's slots), where a name decoded from an API object sits wherever
	// that object did.
	m[unique.Make(node).Value()] = slot
	s.m.Store(&m)
}

// Delete forgets node. Callers hold their writers' lock.
func (s *Slots[T]) Delete(node string) {
	cur := s.current()
	if slot, ok := cur[node]; ok {
		slot.Store(nil) // a reader holding the old map sees nothing either
		m := maps.Clone(cur)
		delete(m, node)
		s.m.Store(&m)
	}
}

// Range calls f with every node's value, skipping nodes without one.
func (s *Slots[T]) Range(f func(node string, v *T)) {
	for node, slot := range s.current() {
		if v := slot.Load(); v != nil {
			f(node, v)
		}
	}
}
