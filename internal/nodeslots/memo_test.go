package nodeslots

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// entered is n nodes with a value in s, each entered in the index by its
// object.
func entered(s Slots[int], n int) []*corev1.Node {
	out := make([]*corev1.Node, n)
	for i := range out {
		out[i] = node(fmt.Sprintf("n%d", i))
		v := i
		s.Set(out[i].Name, &v)
		s.Of(out[i])
	}
	return out
}

// Every node keeps its value for the cycle that put it, and only for it.
func TestMemoLastsOneCycle(t *testing.T) {
	s := NewSlots[int](nil)
	ns := entered(s, 100)
	c := s.Begin()
	for i, n := range ns {
		c.Put(n, int64(i))
	}
	for i, n := range ns {
		if v, ok := c.Get(n); !ok || v != int64(i) {
			t.Fatalf("%s: got %d, %v; put %d", n.Name, v, ok, i)
		}
	}
	next := s.Begin()
	for _, n := range ns {
		if v, ok := next.Get(n); ok {
			t.Fatalf("%s: the next cycle read %d, put in the one before", n.Name, v)
		}
	}
	next.Put(ns[0], 100)
	if v, ok := c.Get(ns[0]); ok {
		t.Errorf("the earlier cycle read %d after the next one wrote", v)
	}
	if v, ok := next.Get(ns[0]); !ok || v != 100 {
		t.Errorf("next cycle: got %d, %v", v, ok)
	}
	c.Put(ns[1], 3)
	c.Put(ns[1], 4) // Filter's second pass with nominated pods
	if v, _ := c.Get(ns[1]); v != 4 {
		t.Errorf("a second Put for the same node: got %d, want 4", v)
	}
}

// Columns keep their memos apart, and a value outside 0–255 is not kept.
func TestMemoPerColumnAndRange(t *testing.T) {
	table := &Table{}
	a, b := NewSlots[int](table), NewSlots[int](table)
	ns := entered(a, 1)
	ca, cb := a.Begin(), b.Begin()
	ca.Put(ns[0], 7)
	if v, ok := cb.Get(ns[0]); ok {
		t.Errorf("column b read %d, put by column a", v)
	}
	for _, v := range []int64{-1, 256} {
		ca.Put(ns[0], v)
		if got, _ := ca.Get(ns[0]); got != 7 {
			t.Errorf("Put(%d) replaced 7 with %d", v, got)
		}
	}
	ca.Put(ns[0], 255)
	if got, ok := ca.Get(ns[0]); !ok || got != 255 {
		t.Errorf("Put(255): got %d, %v", got, ok)
	}
	var zero Cycle
	zero.Put(ns[0], 1)
	if _, ok := zero.Get(ns[0]); ok {
		t.Error("the zero Cycle returned a value")
	}
}

// A rebuild of the index carries the cycle's values over; a node object
// replaced after Put (its entry taken out) reads nothing, and neither does
// a node never entered.
func TestMemoThroughRebuildsAndReplacements(t *testing.T) {
	s := NewSlots[int](nil)
	ns := entered(s, 10)
	c := s.Begin()
	for i, n := range ns {
		c.Put(n, int64(i))
	}
	before := s.t.index.Load()
	more := entered(s, 2000) // n0…n9 again (new objects) and more: rebuilds
	if s.t.index.Load() == before {
		t.Fatal("the index was not rebuilt")
	}
	for _, n := range ns {
		if v, ok := c.Get(n); ok {
			t.Errorf("%s: replaced object read %d", n.Name, v)
		}
	}
	c = s.Begin()
	for i, n := range more[10:20] {
		c.Put(n, int64(i))
	}
	for range 3 { // new nodes until the next rebuild
		cur := s.t.index.Load()
		for k := 0; s.t.index.Load() == cur; k++ {
			name := fmt.Sprintf("x%d-%d", len(s.t.index.Load().entries), k)
			v := k
			s.Set(name, &v)
			s.Of(node(name))
		}
	}
	for i, n := range more[10:20] {
		if v, ok := c.Get(n); !ok || v != int64(i) {
			t.Errorf("%s after rebuilds: got %d, %v; want %d", n.Name, v, ok, i)
		}
	}
	if _, ok := c.Get(node("never")); ok {
		t.Error("a node never entered has a value")
	}
}

// Filter runs on many goroutines at once; Score reads after all of them
// (run with -race).
func TestMemoConcurrentPuts(t *testing.T) {
	s := NewSlots[int](nil)
	ns := entered(s, 2000)
	for range 3 {
		c := s.Begin()
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(ns); i += 8 {
					c.Put(ns[i], int64(i%200))
				}
			}()
		}
		wg.Wait()
		for i, n := range ns {
			if v, ok := c.Get(n); !ok || v != int64(i%200) {
				t.Fatalf("%s: got %d, %v; want %d", n.Name, v, ok, i%200)
			}
		}
	}
}
