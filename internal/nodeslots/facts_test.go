package nodeslots

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func labelled(name string, mark bool) *corev1.Node {
	n := node(name)
	if mark {
		n.Annotations = map[string]string{"mark": "yes"}
	}
	return n
}

func marked(n *corev1.Node) bool { _, ok := n.Annotations["mark"]; return ok }

// A column's fact is the fact about the very object handed in, through the
// first lookup (by name), later ones (by the index), a node update that
// flips it, rebuilds of the index and other columns of the same row; it is
// worked out once per object.
func TestFacts(t *testing.T) {
	tbl := &Table{}
	calls := 0
	a := NewSlots[int](tbl).WithFact(func(n *corev1.Node) bool { calls++; return marked(n) })
	b := NewSlots[int](tbl)
	one := 1
	a.Set("n1", &one)
	b.Set("n1", &one)

	plain := labelled("n1", false)
	for range 3 {
		if v, fact := a.OfFact(plain); v == nil || fact {
			t.Fatalf("OfFact(unmarked n1) = %v, %v; want the value, false", v, fact)
		}
	}
	if calls != 1 {
		t.Errorf("fact worked out %d times for one object, want 1", calls)
	}
	// The node is updated: a new object that carries the annotation.
	withMark := labelled("n1", true)
	for range 3 {
		if v, fact := a.OfFact(withMark); v == nil || !fact {
			t.Fatalf("OfFact(marked n1) = %v, %v; want the value, true", v, fact)
		}
	}
	// A column without a fact reads none, from the same entry.
	if v, fact := b.OfFact(withMark); v == nil || fact {
		t.Errorf("column without a fact: OfFact = %v, %v; want the value, false", v, fact)
	}
	// The old object is still what an older snapshot may hand out.
	if _, fact := a.OfFact(plain); fact {
		t.Error("old unmarked object read as marked")
	}
	// No row: no value and no fact.
	if v, fact := a.OfFact(labelled("n2", true)); v != nil || fact {
		t.Errorf("node without a row: OfFact = %v, %v", v, fact)
	}

	// Facts survive index rebuilds: enter enough nodes to rebuild it a few
	// times, every third one marked.
	const nodes = 3 * minIndex
	objs := make([]*corev1.Node, nodes)
	for i := range objs {
		a.Set(fmt.Sprintf("m%d", i), &one)
		objs[i] = labelled(fmt.Sprintf("m%d", i), i%3 == 0)
		a.OfFact(objs[i])
	}
	for i, n := range objs {
		if _, fact := a.OfFact(n); fact != (i%3 == 0) {
			t.Fatalf("m%d after rebuilds: fact %v, want %v", i, fact, i%3 == 0)
		}
	}
}

// A fact set after objects were entered applies to them too: they are
// entered again.
func TestFactSetLate(t *testing.T) {
	s := NewSlots[int](nil)
	one := 1
	s.Set("n1", &one)
	n1 := labelled("n1", true)
	if v, fact := s.OfFact(n1); v == nil || fact {
		t.Fatalf("before WithFact: %v, %v; want the value, no fact", v, fact)
	}
	s = s.WithFact(marked)
	if v, fact := s.OfFact(n1); v == nil || !fact {
		t.Fatalf("after WithFact: %v, %v; want the value, true", v, fact)
	}
	if v, fact := s.OfFact(n1); v == nil || !fact {
		t.Fatalf("after WithFact, from the index: %v, %v; want the value, true", v, fact)
	}
	// Values set afterwards still reach the re-entered object.
	two := 2
	s.Set("n1", &two)
	if v, _ := s.OfFact(n1); v == nil || *v != 2 {
		t.Errorf("value after Set = %v, want 2", v)
	}
}
