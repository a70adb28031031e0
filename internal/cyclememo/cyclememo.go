// Package cyclememo carries a number a plugin's Filter worked out for a node
// to the same plugin's Score for that node, within one scheduling cycle.
//
// The framework runs Filter on a node and, once every node is filtered,
// Score on the nodes that passed. For a Koord plugin both start by finding
// the node's own record (a map lookup by the node's name, then the record),
// and in the whole-scheduler benchmark those reads are cache misses each
// time: by Score, Filter's reads of hundreds of other nodes have evicted
// them. A plugin that computes the node's score while Filter has the record
// at hand, and leaves it here, lets Score read one slot of a table that its
// own cycle just wrote instead.
//
// Slots are found by the address of the node's *v1.Node: the scheduler's
// snapshot, which Filter and Score of a cycle share, keeps that object alive
// and unchanged for the whole cycle, so its address names the node within
// the cycle without reading its name. A slot is one word: the cycle that
// wrote it, the node's address and the value (a score, 0–100), written with
// one store, so a reader sees all three from one write; values never
// outlive their cycle. Two nodes of a cycle that land on one slot keep one of
// them, and Score works the other out as it would without the memo. A
// missing value is only ever a slower Score.
package cyclememo

import (
	"math/bits"
	"sync/atomic"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// A slot's word, from the top: the cycle (cycleBits), the node's address
// divided by 8 (addrBits: 48-bit addresses, objects 8-byte aligned), the
// value (valueBits). Zero is an empty slot: cycle numbers start at 1.
const (
	valueBits = 7
	addrBits  = 45
	cycleBits = 64 - addrBits - valueBits
	// MaxValue is the largest value Put keeps (framework.MaxNodeScore fits).
	MaxValue = 1<<valueBits - 1
	cycles   = 1<<cycleBits - 1
)

// Table is one plugin's memo; the zero value is ready. A scheduler profile
// runs one cycle at a time, so one table per plugin instance suffices.
type Table struct {
	slots atomic.Pointer[[]atomic.Uint64]
	last  atomic.Uint64 // the number of cycles begun
}

// Cycle is one scheduling cycle's view of a table, made by Begin in
// PreFilter and kept in the cycle's state. The zero Cycle remembers nothing.
type Cycle struct {
	slots []atomic.Uint64
	shift uint8
	id    uint64 // 1…cycles
}

// Begin starts a cycle over nodes nodes (PreFilter's node count): the table
// holds at least twice as many slots, so few nodes share one.
func (t *Table) Begin(nodes int) Cycle {
	n := t.last.Add(1)
	id := (n-1)%cycles + 1
	want := 1 << bits.Len(uint(2*max(nodes, 32)-1))
	var slots []atomic.Uint64
	if s := t.slots.Load(); s != nil {
		slots = *s
	}
	// A new table when the cluster outgrows it, and when cycle numbers
	// start over: no slot may carry a number a later cycle reuses. Earlier
	// cycles keep the slice they began with.
	if len(slots) < want || id == 1 {
		slots = make([]atomic.Uint64, max(want, len(slots)))
		t.slots.Store(&slots)
	}
	return Cycle{slots: slots, shift: uint8(64 - bits.TrailingZeros(uint(len(slots)))), id: id}
}

// key is the node's address in addrBits, or false where it does not fit.
func key(node *corev1.Node) (uint64, bool) {
	a := uint64(uintptr(unsafe.Pointer(node)))
	return a >> 3, node != nil && a&7 == 0 && a>>(addrBits+3) == 0
}

// slot spreads node keys over the slots (Fibonacci hashing).
func (c Cycle) slot(k uint64) *atomic.Uint64 {
	return &c.slots[(k*0x9E3779B97F4A7C15)>>c.shift]
}

// Put leaves v (0…MaxValue; others are not kept) for node in this cycle.
// Safe from the concurrent Filter calls of one cycle; a later Put for the
// same node replaces the value.
func (c Cycle) Put(node *corev1.Node, v int64) {
	k, ok := key(node)
	if c.slots == nil || !ok || v < 0 || v > MaxValue {
		return
	}
	s := c.slot(k)
	if cur := s.Load(); cur>>(addrBits+valueBits) == c.id && (cur>>valueBits)&(1<<addrBits-1) != k {
		return // another node of this cycle has the slot
	}
	s.Store(c.id<<(addrBits+valueBits) | k<<valueBits | uint64(v))
}

// Get is the value Put left for node in this cycle, if any.
func (c Cycle) Get(node *corev1.Node) (int64, bool) {
	k, ok := key(node)
	if c.slots == nil || !ok {
		return 0, false
	}
	w := c.slot(k).Load()
	if w>>valueBits != c.id<<addrBits|k {
		return 0, false
	}
	return int64(w & MaxValue), true
}
