// Package nodeslots publishes per-node values to readers that take no lock:
// a scheduler plugin's Filter and Score run for every pod on every node from
// many goroutines, and a read lock there costs more than the read itself, in
// cache-line traffic between CPUs.
//
// A Table has one row per node, shared by the Koord plugins of one scheduler
// profile; each plugin keeps its values in its own column (Slots). The
// framework runs a profile's plugins one after another on the same node, so
// the first plugin's lookup of the node's row (hashing its name, the map's
// buckets, the row itself) leaves everything the next ones read in the CPU's
// cache: with a map per plugin, each paid those misses again, and they were
// most of what the plugins cost per node in the whole-scheduler benchmark.
//
// Readers in Filter and Score find a node's values by the node object they
// are handed (Of): the scheduler hands every plugin the same *v1.Node for a
// node until the node changes, so its address finds the values without
// reading the name, whose bytes are one more cache miss per node, and two
// when comparing it with the key. The node index is an open-addressed array
// of one cache line per entry, holding the object's address and a copy of
// its row's values: a lookup reads the line it hashes to and nothing else,
// where a Go map read the map's group and then the row, two or three lines
// that the API server sharing the CPU's caches had evicted since the last
// cycle. A node object not seen before is looked up by name once and
// entered. A column may keep a fact about each node object in the entry too
// (Slots.WithFact), worked out when the object is entered, so a plugin need
// not read the object itself per pod.
//
// Writers serialise on the table's lock; readers see each node's latest
// value. Rows for new nodes gather in a small map merged into the large one
// in batches, so that n nodes arriving at start cost O(n·√n) copying rather
// than a copy of the whole map per node.
package nodeslots

import (
	"context"
	"maps"
	"math"
	"math/bits"
	"reflect"
	"sync"
	"sync/atomic"
	"unique"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// maxColumns is how many plugins can share a table: the three Koord plugins
// with per-node state. An index entry, with a value and a memo word per
// column, stays within one cache line.
const maxColumns = 3

// Table holds one row per node with a value in any column. The zero value is
// empty and ready.
type Table struct {
	// main holds most rows; fresh those added since main was last rebuilt.
	// Readers look in main first; fresh holds at most max(64, √len(main)).
	main, fresh atomic.Pointer[map[string]*row]
	// index finds values by node object (see nodeIndex).
	index atomic.Pointer[nodeIndex]
	// Writers' fields on another cache line than the readers' pointers:
	// taking the lock must not evict those from the other CPUs' caches.
	_       [64]byte
	columns int
	mu      sync.Mutex
	// copied counts rows copied into new maps (tests bound it).
	copied int
	// cycles numbers each column's memo cycles (see Cycle).
	cycles [maxColumns]atomic.Uint64
	// facts are the columns' facts about node objects (see WithFact).
	facts [maxColumns]func(*corev1.Node) bool
}

// row is a node's values, one per column, each a *T of its column's type;
// readers by name read it, and the node index mirrors it.
type row struct {
	vals [maxColumns]unsafe.Pointer
	// The fields below are only touched under the table's lock.
	// entry is the row's entry in the current node index, nil when none:
	// writers update its copy of vals along with the row's.
	entry *entry
	// gone is set when the row leaves the table.
	gone bool
}

func (r *row) empty() bool {
	for i := range r.vals {
		if atomic.LoadPointer(&r.vals[i]) != nil {
			return false
		}
	}
	return true
}

func load(p *atomic.Pointer[map[string]*row]) map[string]*row {
	if m := p.Load(); m != nil {
		return *m
	}
	return nil
}

func (t *Table) row(node string) *row {
	// fresh before main: a merge publishes the new main before it empties
	// fresh, so a row that was in fresh is in one of the two read here. (The
	// other order could read main before a merge and fresh after it, and
	// miss the node.)
	fresh := load(&t.fresh)
	if r := load(&t.main)[node]; r != nil {
		return r
	}
	return fresh[node]
}

// nodeIndex is an open-addressed hash table (linear probing) from node
// object to entry. Entries are only ever added (in place, under the table's
// lock, the key stored last) or made tombstones, never reused: a reader
// that found an entry for its object never reads another object's values
// from it. An index half full (live entries and tombstones) is replaced by
// a new one holding the live entries, a third of its size at most, so most
// lookups read a single entry.
type nodeIndex struct {
	entries []entry
	// rows[i] is the row entries[i] is for (under the table's lock).
	rows  []*row
	shift uint8 // 64 − log2(len(entries)), for Fibonacci hashing
	// used counts live entries and tombstones, live the former (under the
	// table's lock).
	used, live int
}

// entry is one node object's line of the index: the object, a copy of its
// row's values, written under the table's lock whenever the row's are, each
// column's memo word (see Cycle), and each column's fact about the object
// (see WithFact), a bit per column.
type entry struct {
	// node is nil for a free entry and tombstone for one taken out.
	node  atomic.Pointer[corev1.Node]
	vals  [maxColumns]unsafe.Pointer
	memo  [maxColumns]atomic.Uint64
	facts atomic.Uint32
	_     [64 - 8 - maxColumns*16 - 4]byte
}

// tombstone keys the entries taken out of an index: of an object replaced by
// its node's newer one, or of a row that left the table. Probes go on past
// it; it is no object a plugin is handed.
var tombstone = &corev1.Node{}

// minIndex is the smallest index, in entries: 64 KiB, which Go allocates
// page-aligned (smaller arrays of pointers start after an 8-byte header),
// so every entry starts a cache line.
const minIndex = 1024

func newIndex(size int) *nodeIndex {
	return &nodeIndex{entries: make([]entry, size), rows: make([]*row, size), shift: uint8(64 - bits.TrailingZeros(uint(size)))}
}

// first is where node's probe starts.
func (ix *nodeIndex) first(node *corev1.Node) uint64 {
	return (uint64(uintptr(unsafe.Pointer(node))) * 0x9E3779B97F4A7C15) >> ix.shift
}

// find is node's live entry, nil when the index has none.
func (ix *nodeIndex) find(node *corev1.Node) *entry {
	if ix == nil {
		return nil
	}
	mask := uint64(len(ix.entries) - 1)
	for i := ix.first(node); ; i = (i + 1) & mask {
		e := &ix.entries[i]
		switch e.node.Load() {
		case node:
			return e
		case nil:
			return nil
		}
	}
}

// insertLocked enters node for r in a free entry, with the columns' facts
// about it and memo words carried over from an earlier index (nil: none);
// the index has room.
func (ix *nodeIndex) insertLocked(node *corev1.Node, r *row, facts uint32, memo *[maxColumns]atomic.Uint64) *entry {
	mask := uint64(len(ix.entries) - 1)
	i := ix.first(node)
	for ix.entries[i].node.Load() != nil {
		i = (i + 1) & mask
	}
	e := &ix.entries[i]
	for c := range r.vals {
		atomic.StorePointer(&e.vals[c], atomic.LoadPointer(&r.vals[c]))
		if memo != nil {
			e.memo[c].Store(memo[c].Load())
		}
	}
	e.facts.Store(facts)
	ix.rows[i] = r
	e.node.Store(node) // last: a reader that sees the key sees the values
	ix.used++
	ix.live++
	r.entry = e
	return e
}

// dropLocked makes r's entry a tombstone.
func (ix *nodeIndex) dropLocked(r *row) {
	e := r.entry
	e.node.Store(tombstone)
	for c := range e.vals {
		atomic.StorePointer(&e.vals[c], nil)
	}
	ix.rows[(uintptr(unsafe.Pointer(e))-uintptr(unsafe.Pointer(&ix.entries[0])))/unsafe.Sizeof(entry{})] = nil
	r.entry = nil
	ix.live--
}

// of is the value in column c of the node whose object the scheduler
// handed to Filter or Score: from its index entry, or, for an object not
// seen before, from its row found by name, entering the object.
// The column's fact about the object comes with it (false when the node
// has no row).
func (t *Table) of(node *corev1.Node, c int, fact func(*corev1.Node) bool) (unsafe.Pointer, bool) {
	if e := t.index.Load().find(node); e != nil {
		return atomic.LoadPointer(&e.vals[c]), e.facts.Load()&(1<<c) != 0
	}
	r := t.row(node.Name)
	if r == nil {
		return nil, false
	}
	if e := t.enter(node, r); e != nil {
		return atomic.LoadPointer(&r.vals[c]), e.facts.Load()&(1<<c) != 0
	}
	return atomic.LoadPointer(&r.vals[c]), fact != nil && fact(node)
}

// enter makes node the object r's index entry is for, in place of the
// object it was for (a node update replaces the object; the old one then
// misses and is looked up by name should an older snapshot still hand it
// out). When the index would be over half full, a new one at least three
// times the live entries takes its place: rebuilds copy at most two entries
// per object entered. It returns node's entry, nil when r left the table.
func (t *Table) enter(node *corev1.Node, r *row) *entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.gone {
		return nil
	}
	ix := t.index.Load()
	if e := ix.find(node); e != nil {
		return e // another reader entered it meanwhile
	}
	if r.entry != nil {
		ix.dropLocked(r)
	}
	if ix == nil || 2*(ix.used+1) > len(ix.entries) {
		live := 0
		if ix != nil {
			live = ix.live
		}
		size := minIndex
		for size < 3*(live+1) {
			size *= 2
		}
		next := newIndex(size)
		if ix != nil {
			for i := range ix.entries {
				e := &ix.entries[i]
				if n := e.node.Load(); n != nil && n != tombstone {
					next.insertLocked(n, ix.rows[i], e.facts.Load(), &e.memo)
				}
			}
			t.copied += ix.live
		}
		t.index.Store(next)
		ix = next
	}
	return ix.insertLocked(node, r, t.factsLocked(node), nil)
}

// factsLocked works out the columns' facts about node.
func (t *Table) factsLocked(node *corev1.Node) uint32 {
	var bits uint32
	for c, f := range t.facts {
		if f != nil && f(node) {
			bits |= 1 << c
		}
	}
	return bits
}

// addLocked makes node's row.
func (t *Table) addLocked(node string) *row {
	r := &row{}
	main, fresh := load(&t.main), load(&t.fresh)
	// Readers compare the key's bytes for every node: the canonical copies
	// of all node names sit together in memory, where a name decoded from
	// an API object sits wherever that object did.
	key := unique.Make(node).Value()
	if len(fresh)+1 > max(64, int(math.Sqrt(float64(len(main))))) {
		m := make(map[string]*row, len(main)+len(fresh)+1)
		maps.Copy(m, main)
		maps.Copy(m, fresh)
		m[key] = r
		t.copied += len(m)
		t.main.Store(&m)
		t.fresh.Store(nil)
		return r
	}
	f := make(map[string]*row, len(fresh)+1)
	maps.Copy(f, fresh)
	f[key] = r
	t.copied += len(f)
	t.fresh.Store(&f)
	return r
}

// removeLocked forgets node's row once no column has a value there.
func (t *Table) removeLocked(node string) {
	for _, p := range []*atomic.Pointer[map[string]*row]{&t.main, &t.fresh} {
		cur := load(p)
		if r, ok := cur[node]; ok && r.empty() {
			r.gone = true
			if r.entry != nil {
				t.index.Load().dropLocked(r)
			}
			m := maps.Clone(cur)
			delete(m, node)
			t.copied += len(m)
			p.Store(&m)
		}
	}
}

var shared sync.Map // fwk.Handle → *Table

// Shared is the table of the scheduler profile whose framework handle is h:
// every plugin of the profile gets the same one, until ctx (the context the
// framework gave the plugins' constructors) ends. A nil or incomparable
// handle (some unit tests' fakes) gets a table of its own.
func Shared(ctx context.Context, h any) *Table {
	if h == nil || !reflect.TypeOf(h).Comparable() {
		return &Table{}
	}
	if t, ok := shared.Load(h); ok {
		return t.(*Table)
	}
	t, loaded := shared.LoadOrStore(h, &Table{})
	if !loaded {
		context.AfterFunc(ctx, func() { shared.CompareAndDelete(h, t) })
	}
	return t.(*Table)
}

// Slots is one plugin's column of a table: a *T per node.
type Slots[T any] struct {
	t    *Table
	i    int
	fact func(*corev1.Node) bool
}

// NewSlots adds a column to t. A nil or full table (a profile cannot have
// that many Koord plugins; tests may build several plugins on one handle)
// gives a column of a table of its own: correct, only not shared.
func NewSlots[T any](t *Table) Slots[T] {
	if t == nil {
		t = &Table{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.columns == maxColumns {
		return Slots[T]{t: &Table{columns: 1}, i: 0}
	}
	t.columns++
	return Slots[T]{t: t, i: t.columns - 1}
}

// Get is node's value, nil when there is none.
func (s Slots[T]) Get(node string) *T {
	if r := s.t.row(node); r != nil {
		return (*T)(atomic.LoadPointer(&r.vals[s.i]))
	}
	return nil
}

// Of is the value of the node whose object the scheduler handed to Filter
// or Score, nil when there is none: Get without reading the node's name once
// the object has been seen.
func (s Slots[T]) Of(node *corev1.Node) *T {
	v, _ := s.t.of(node, s.i, nil)
	return (*T)(v)
}

// WithFact is the column with a fact about node objects that its plugin
// reads in Filter or Score: worked out once per object, when the object is
// entered in the node index, and read beside the value (OfFact) from the
// line the value is read from. A plugin that looked at a node's annotations
// for every pod on every node read the node object's line and the map's
// each time, cache misses the index line does not cost. Exact because
// the scheduler never changes a node object it handed out: a change comes as
// a new object, entered afresh. fact must be quick and must not block (it
// runs under the table's lock). Call it before the plugin serves: objects
// entered earlier are entered again, so their memo words are lost.
func (s Slots[T]) WithFact(fact func(*corev1.Node) bool) Slots[T] {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	s.t.facts[s.i] = fact
	s.fact = fact
	if ix := s.t.index.Load(); ix != nil {
		for _, r := range ix.rows {
			if r != nil {
				r.entry = nil
			}
		}
		s.t.index.Store(nil)
	}
	return s
}

// OfFact is Of and the column's fact (WithFact) about node; false when the
// node has no row or the column has no fact.
func (s Slots[T]) OfFact(node *corev1.Node) (*T, bool) {
	v, fact := s.t.of(node, s.i, s.fact)
	return (*T)(v), fact
}

// Set publishes v (nil: none for now) as node's value. The node keeps its
// row: a value cleared on a change and published again when it is next
// needed (NodeNUMAResource's views) does not copy a map twice.
func (s Slots[T]) Set(node string, v *T) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	r := s.t.row(node)
	if r == nil {
		if v == nil {
			return
		}
		r = s.t.addLocked(node)
	}
	atomic.StorePointer(&r.vals[s.i], unsafe.Pointer(v))
	if r.entry != nil {
		atomic.StorePointer(&r.entry.vals[s.i], unsafe.Pointer(v))
	}
}

// Delete forgets node's value, and the node's row once no column has one:
// call it when the plugin forgets the node.
func (s Slots[T]) Delete(node string) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	if r := s.t.row(node); r != nil {
		atomic.StorePointer(&r.vals[s.i], nil)
		if r.entry != nil {
			atomic.StorePointer(&r.entry.vals[s.i], nil)
		}
		s.t.removeLocked(node)
	}
}

// Cycle is one scheduling cycle's memo in a column: a number (0–255) per
// node that the column's plugin works out in Filter and reads back in Score
// of the same cycle. It lives in the node's index entry, the line Filter and
// Score read the node's value from anyway: a separate table read a line of
// its own per node, and a cache miss in Score. A value is kept for the node
// object it was put for, within the cycle; a missing value (an object
// entered after Put, a node without a row) is only ever a slower Score.
type Cycle struct {
	t  *Table
	i  int
	id uint64 // 1…2⁵⁶−1; 0 is a cycle that remembers nothing
}

// Begin starts a cycle; call it in PreFilter and keep the Cycle in the
// cycle's state.
func (s Slots[T]) Begin() Cycle {
	return Cycle{t: s.t, i: s.i, id: s.t.cycles[s.i].Add(1) & (1<<56 - 1)}
}

// Put leaves v (0–255; others are not kept) for node in this cycle. Safe from
// the concurrent Filter calls of one cycle; a later Put for the same node
// replaces the value.
func (c Cycle) Put(node *corev1.Node, v int64) {
	if c.id == 0 || v < 0 || v > 255 {
		return
	}
	if e := c.t.index.Load().find(node); e != nil {
		e.memo[c.i].Store(c.id<<8 | uint64(v))
	}
}

// Get is the value Put left for node in this cycle, if any.
func (c Cycle) Get(node *corev1.Node) (int64, bool) {
	if c.id == 0 {
		return 0, false
	}
	if e := c.t.index.Load().find(node); e != nil {
		if w := e.memo[c.i].Load(); w>>8 == c.id {
			return int64(w & 255), true
		}
	}
	return 0, false
}
