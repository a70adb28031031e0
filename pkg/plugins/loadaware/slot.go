package loadaware

import (
	"runtime"
	"sync/atomic"
	"time"
)

// estimateSlot is where a node's estimate lives for as long as the cache
// knows the node: rewritten in place on every change (a sequence lock), not
// replaced by a new object.
//
// Filter's first read of a node's estimate was the largest single cost
// LoadAwareScheduling had in the whole-scheduler benchmark (about 360 ns a
// node): each change allocated a fresh estimate, so the estimates of a
// filtering pass lay scattered over the heap among the API server's objects,
// a cache and TLB miss apiece. Slots are cut from chunks of consecutive
// memory in the order nodes first report, which is the order the scheduler
// walks its node list in, so a pass reads them at a constant stride the
// CPU's prefetcher follows, from a few pages.
type estimateSlot struct {
	// seq is odd while the writer rewrites the slot; readers retry until
	// they read the same even value before and after copying.
	seq     atomic.Uint64
	updated atomic.Int64
	usage   [inlineResources][3]atomic.Int64
	more    atomic.Pointer[[][3]int64]
	// The first line holds seq, updated and two resources' figures: a
	// profile of up to two resources reads one line per node.
	_ [192 - 8 - 8 - inlineResources*24 - 8]byte
}

// store rewrites the slot with e. Callers serialise (the cache's lock).
func (s *estimateSlot) store(e *nodeEstimate) {
	q := s.seq.Load()
	s.seq.Store(q + 1)
	s.updated.Store(e.updated)
	for i := range e.usage {
		for k := range e.usage[i] {
			s.usage[i][k].Store(e.usage[i][k])
		}
	}
	if e.more != nil {
		more := e.more
		s.more.Store(&more)
	} else {
		s.more.Store(nil)
	}
	s.seq.Store(q + 2)
}

// load copies the update time and the first n resources' figures into e,
// as one writer stored them.
func (s *estimateSlot) load(e *nodeEstimate, n int) {
	inline := min(n, inlineResources)
	for tries := 0; ; tries++ {
		q := s.seq.Load()
		if q&1 == 0 {
			e.updated = s.updated.Load()
			for i := range inline {
				for k := range e.usage[i] {
					e.usage[i][k] = s.usage[i][k].Load()
				}
			}
			e.more = nil
			if n > inlineResources {
				if m := s.more.Load(); m != nil {
					e.more = *m
				}
			}
			if s.seq.Load() == q {
				return
			}
		}
		// The writer holds the cache's lock and may have been preempted
		// mid-write: let it run.
		if tries >= 3 {
			runtime.Gosched()
		}
	}
}

// slotsPerChunk slots make a chunk of 12 KiB, a Go size class, so a chunk is
// one allocation of consecutive cache lines.
const slotsPerChunk = 64

// slotReuseAfter is how long a freed slot waits before it holds another
// node: a reader that found the slot through the node index just before the
// node left reads it within one Filter or Score call, far shorter than this.
const slotReuseAfter = time.Minute

// slotAllocator hands out slots; the cache's lock guards it.
type slotAllocator struct {
	chunk *[slotsPerChunk]estimateSlot
	next  int
	freed []freedSlot // oldest first
}

type freedSlot struct {
	slot *estimateSlot
	at   time.Time
}

// get is a slot for a node that has none: a freed one whose wait is over,
// else the next one of the current chunk.
func (a *slotAllocator) get(now time.Time) *estimateSlot {
	if len(a.freed) > 0 && now.Sub(a.freed[0].at) >= slotReuseAfter {
		s := a.freed[0].slot
		a.freed[0] = freedSlot{}
		a.freed = a.freed[1:]
		return s
	}
	if a.chunk == nil || a.next == slotsPerChunk {
		a.chunk = new([slotsPerChunk]estimateSlot)
		a.next = 0
	}
	s := &a.chunk[a.next]
	a.next++
	return s
}

// put frees the slot of a node the cache forgot.
func (a *slotAllocator) put(s *estimateSlot, now time.Time) {
	a.freed = append(a.freed, freedSlot{slot: s, at: now})
}
