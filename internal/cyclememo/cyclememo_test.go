package cyclememo

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func nodes(n int) []*corev1.Node {
	out := make([]*corev1.Node, n)
	for i := range out {
		out[i] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}}
	}
	return out
}

func TestValuesLastOneCycle(t *testing.T) {
	var tab Table
	ns := nodes(100)
	c := tab.Begin(len(ns))
	for i, n := range ns {
		c.Put(n, int64(i)) // 0…99: scores
	}
	hits := 0
	for i, n := range ns {
		if v, ok := c.Get(n); ok {
			hits++
			if v != int64(i) {
				t.Fatalf("%s: got %d, put %d", n.Name, v, i)
			}
		}
	}
	// 100 nodes in 256 slots: about 18 share one with another (and lose
	// their value), most do not.
	if hits < 70 {
		t.Errorf("only %d of 100 nodes kept their value", hits)
	}
	next := tab.Begin(len(ns))
	for _, n := range ns {
		if v, ok := next.Get(n); ok {
			t.Fatalf("%s: the next cycle read %d, put in the one before", n.Name, v)
		}
	}
	// The earlier cycle's handle still reads only its own values.
	next.Put(ns[0], 100)
	if v, ok := c.Get(ns[0]); ok {
		t.Errorf("the earlier cycle read %d after the next one wrote the slot", v)
	}
	if v, ok := next.Get(ns[0]); !ok || v != 100 {
		t.Errorf("next cycle: got %d, %v", v, ok)
	}
}

// Nodes landing on one slot: the first keeps it, the others read nothing
// rather than its value.
func TestSharedSlotKeepsTheFirst(t *testing.T) {
	var tab Table
	c := tab.Begin(32)
	ns := nodes(5000)
	first := map[*atomic.Uint64]*corev1.Node{}
	var a, b *corev1.Node
	for _, n := range ns {
		k, _ := key(n)
		s := c.slot(k)
		if f, ok := first[s]; ok {
			a, b = f, n
			break
		}
		first[s] = n
	}
	if a == nil {
		t.Fatal("no two of 5000 nodes share one of 64 slots")
	}
	c.Put(a, 1)
	c.Put(b, 2)
	if v, ok := c.Get(a); !ok || v != 1 {
		t.Errorf("first node: got %d, %v; want 1", v, ok)
	}
	if v, ok := c.Get(b); ok {
		t.Errorf("second node read %d from the first node's slot", v)
	}
	c.Put(a, 3) // the same node again (Filter's second pass with nominated pods)
	if v, _ := c.Get(a); v != 3 {
		t.Errorf("a second Put for the same node: got %d, want 3", v)
	}
}

// Scores are 0–100; a value the word cannot hold is not kept.
func TestValuesOutOfRange(t *testing.T) {
	var tab Table
	c := tab.Begin(1)
	n := nodes(1)[0]
	for _, v := range []int64{-1, MaxValue + 1} {
		c.Put(n, v)
		if got, ok := c.Get(n); ok {
			t.Errorf("Put(%d): Get returned %d", v, got)
		}
	}
	c.Put(n, MaxValue)
	if got, ok := c.Get(n); !ok || got != MaxValue {
		t.Errorf("Put(%d): got %d, %v", MaxValue, got, ok)
	}
}

// Cycle numbers start over after 2^12-1 cycles; a value from the cycle that
// had the number before is not read.
func TestCycleNumbersStartOver(t *testing.T) {
	var tab Table
	n := nodes(1)[0]
	first := tab.Begin(1)
	first.Put(n, 7)
	for range cycles - 1 {
		tab.Begin(1)
	}
	again := tab.Begin(1)
	if again.id != first.id {
		t.Fatalf("cycle %d after %d cycles, want %d again", again.id, cycles, first.id)
	}
	if v, ok := again.Get(n); ok {
		t.Errorf("the cycle numbered as one %d cycles before read its value %d", cycles, v)
	}
}

func TestZeroCycleRemembersNothing(t *testing.T) {
	var c Cycle
	n := nodes(1)[0]
	c.Put(n, 1)
	if _, ok := c.Get(n); ok {
		t.Error("the zero Cycle returned a value")
	}
}

func TestGrowsWithTheCluster(t *testing.T) {
	var tab Table
	if c := tab.Begin(10); len(c.slots) != 64 {
		t.Errorf("10 nodes: %d slots, want 64", len(c.slots))
	}
	if c := tab.Begin(2667); len(c.slots) != 8192 {
		t.Errorf("2667 nodes: %d slots, want 8192", len(c.slots))
	}
	if c := tab.Begin(100); len(c.slots) != 8192 {
		t.Errorf("fewer nodes again: %d slots, want the 8192 kept", len(c.slots))
	}
}

// Filter runs on many goroutines at once; Score reads after all of them.
func TestConcurrentPuts(t *testing.T) {
	var tab Table
	ns := nodes(2000)
	for range 3 {
		c := tab.Begin(len(ns))
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(ns); i += 8 {
					c.Put(ns[i], int64(i%100))
					c.Put(ns[(i+1)%len(ns)], int64((i+1)%len(ns)%100))
				}
			}()
		}
		wg.Wait()
		hits := 0
		for i, n := range ns {
			if v, ok := c.Get(n); ok {
				hits++
				if v != int64(i%100) {
					t.Fatalf("%s: got %d, want %d", n.Name, v, i%100)
				}
			}
		}
		if hits < len(ns)/2 {
			t.Errorf("%d of %d nodes kept their value", hits, len(ns))
		}
	}
}
