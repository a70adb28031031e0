package loadaware

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// A profile of up to two resources reads one cache line per node: the
// sequence word, the update time and two resources' figures fill the slot's
// first line, and slots are whole lines; figures past the inline ones still
// come back.
func TestSlotLayout(t *testing.T) {
	if size := unsafe.Sizeof(estimateSlot{}); size%64 != 0 {
		t.Errorf("estimateSlot is %d bytes, not a multiple of 64", size)
	}
	var s estimateSlot
	if end := unsafe.Offsetof(s.usage) + unsafe.Sizeof(s.usage[0])*2; end != 64 {
		t.Errorf("two resources end at byte %d of the slot, not 64", end)
	}
	if size := unsafe.Sizeof([slotsPerChunk]estimateSlot{}); size != 12<<10 {
		t.Errorf("a chunk is %d bytes, not 12 KiB", size)
	}

	n := inlineResources + 2
	filter, score, prod := make(vector, n), make(vector, n), make(vector, n)
	for i := range n {
		filter[i], score[i], prod[i] = int64(i), int64(100+i), int64(200+i)
	}
	updated := time.Unix(1700000000, 5)
	stored := packEstimate(updated, filter, score, prod)
	s.store(&stored)
	var e nodeEstimate
	s.load(&e, n)
	for i := range n {
		if got := [3]int64{e.get(i, filterUsage), e.get(i, scoreUsage), e.get(i, prodUsage)}; got != [3]int64{filter[i], score[i], prod[i]} {
			t.Errorf("resource %d: %v", i, got)
		}
	}
	if !e.updateTime().Equal(updated) {
		t.Errorf("update time %v, want %v", e.updateTime(), updated)
	}
}

// A reader never sees half of one store and half of another: the writer
// stores estimates whose every figure is the same number, and readers on
// other goroutines check each copy they take.
func TestSlotReadersSeeOneStore(t *testing.T) {
	n := inlineResources + 1
	same := func(v int64) nodeEstimate {
		e := nodeEstimate{updated: v, more: [][3]int64{{v, v, v}}}
		for i := range e.usage {
			e.usage[i] = [3]int64{v, v, v}
		}
		return e
	}
	var s estimateSlot
	first := same(1)
	s.store(&first)

	var done atomic.Bool
	var wg sync.WaitGroup
	torn := make(chan string, 2)
	for range 2 {
		wg.Go(func() {
			var e nodeEstimate
			for !done.Load() {
				s.load(&e, n)
				for i := range n {
					for k := range 3 {
						if got := e.get(i, k); got != e.updated {
							select {
							case torn <- "": // report once
							default:
							}
							t.Errorf("copy of store %d holds %d at resource %d, figure %d", e.updated, got, i, k)
							return
						}
					}
				}
			}
		})
	}
	for v := int64(2); v < 20000; v++ {
		e := same(v)
		s.store(&e)
	}
	done.Store(true)
	wg.Wait()
}

// Slots come from consecutive memory in the order nodes ask for them, and a
// freed slot holds no other node until slotReuseAfter has passed.
func TestSlotAllocator(t *testing.T) {
	var a slotAllocator
	t0 := time.Unix(1700000000, 0)
	first := a.get(t0)
	second := a.get(t0)
	if d := uintptr(unsafe.Pointer(second)) - uintptr(unsafe.Pointer(first)); d != unsafe.Sizeof(estimateSlot{}) {
		t.Errorf("second slot %d bytes after the first, want %d", d, unsafe.Sizeof(estimateSlot{}))
	}
	a.put(first, t0)
	if s := a.get(t0.Add(slotReuseAfter - time.Second)); s == first {
		t.Errorf("a slot freed %v ago was handed out again", slotReuseAfter-time.Second)
	}
	if s := a.get(t0.Add(slotReuseAfter)); s != first {
		t.Errorf("a slot freed %v ago was not reused", slotReuseAfter)
	}
	for range slotsPerChunk {
		a.get(t0)
	}
	if a.next > slotsPerChunk || a.chunk == nil {
		t.Errorf("chunk not replaced when full: next %d", a.next)
	}
}

// A node whose NodeMetric goes, with no pods left on it, leaves the cache
// and frees its slot; one that still runs pods keeps both.
func TestNodeForgottenFreesSlot(t *testing.T) {
	clk := &clock{t0}
	p := newPlugin(defaultArgs(t, nil), nil, clk.now, nil)
	p.cache.setMetric("n1", metric("n1", t0, "2", "4Gi"))
	p.cache.setMetric("n2", metric("n2", t0, "2", "4Gi"))
	pod := makePod("web", rl("2", "2Gi"), nil, 0)
	pod.Spec.NodeName = "n2"
	p.onPod(pod)

	p.cache.setMetric("n1", nil)
	p.cache.setMetric("n2", nil)
	if _, ok := p.cache.nodes["n1"]; ok {
		t.Error("n1, without metric or pods, is still in the cache")
	}
	if got := len(p.cache.slots.freed); got != 1 {
		t.Errorf("%d slots freed, want 1 (n1's)", got)
	}
	if p.cache.nodes["n2"] == nil || p.cache.nodes["n2"].slot == nil {
		t.Error("n2, which runs a pod, lost its state or slot")
	}
	if e := p.cache.estimateOf("n2"); e != nil {
		t.Errorf("n2 without a metric has an estimate: %+v", e)
	}
}

// A node's slot is published while it has a metric, unpublished when the
// metric goes, and published again when it comes back; refreshes between
// (pods arriving) rewrite it in place.
func TestSlotPublishedWithMetric(t *testing.T) {
	p := newPlugin(defaultArgs(t, nil), nil, (&clock{t0}).now, nil)
	p.cache.setMetric("n1", metric("n1", t0, "2", "4Gi"))
	pod := makePod("web", rl("2", "2Gi"), nil, 0) // estimate 1700m
	pod.Spec.NodeName = "n1"
	p.onPod(pod)
	if e := p.cache.estimateOf("n1"); e == nil || e.get(0, filterUsage) != 3700 {
		t.Fatalf("with a metric and a pod: %+v, want 3700m", e)
	}
	p.cache.setMetric("n1", nil)
	if e := p.cache.estimateOf("n1"); e != nil {
		t.Fatalf("metric gone: estimate %+v still published", e)
	}
	p.cache.setMetric("n1", metric("n1", t0, "1", "4Gi"))
	if e := p.cache.estimateOf("n1"); e == nil || e.get(0, filterUsage) != 2700 {
		t.Errorf("metric back: %+v, want 2700m", e)
	}
}

// estimateOf is node's estimate by name as Filter would copy it, nil
// without a usable NodeMetric.
func (c *usageCache) estimateOf(node string) *nodeEstimate {
	slot := c.estimates.Get(node)
	if slot == nil {
		return nil
	}
	e := new(nodeEstimate)
	slot.load(e, len(c.resources))
	return e
}
