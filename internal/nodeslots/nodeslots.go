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
// Readers in Filter and Score find a row by the node object they are handed
// (Of): the scheduler hands every plugin the same *v1.Node for a node until
// the node changes, so its address finds the row without reading the name,
// whose bytes are one more cache miss per node, and two when comparing it
// with the key. A node object not seen before is looked up by name once and
// added to that index.
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
	"reflect"
	"sync"
	"sync/atomic"
	"unique"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// maxColumns is how many plugins can share a table: the three Koord plugins
// with per-node state, and room for one more. A row stays within one cache
// line.
const maxColumns = 4

// Table holds one row per node with a value in any column. The zero value is
// empty and ready.
type Table struct {
	// main holds most rows; fresh those added since main was last rebuilt.
	// Readers look in main first; fresh holds at most max(64, √len(main)).
	main, fresh atomic.Pointer[map[string]*row]
	// byNode and byNodeFresh index rows by node object, the same way. An
	// object replaced by a newer one of its node, or whose row left the
	// table, stays in the index until the next merge drops it: at most
	// max(64, √n) objects are held past their time.
	byNode, byNodeFresh atomic.Pointer[map[*corev1.Node]*row]
	// Writers' fields on another cache line than the readers' pointers:
	// taking the lock must not evict those from the other CPUs' caches.
	_       [64]byte
	columns int
	mu      sync.Mutex
	// copied counts rows copied into new maps (tests bound it).
	copied int
}

// row is a node's values, one per column, each a *T of its column's type.
// 64 bytes: one cache line (the size class is aligned to it).
type row struct {
	vals [maxColumns]unsafe.Pointer
	// node is the latest node object indexed to the row: the index's
	// merges drop the others.
	node atomic.Pointer[corev1.Node]
	// gone is set when the row leaves the table; the node index may still
	// point at it until its next merge, and readers then look by name.
	gone atomic.Bool
	_    [64 - maxColumns*8 - 8 - 4]byte
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

// rowOf is node's row, found by the node object's address when it was
// seen before (see the package comment).
func (t *Table) rowOf(node *corev1.Node) *row {
	fresh := loadIndex(&t.byNodeFresh)
	if r := loadIndex(&t.byNode)[node]; r != nil && !r.gone.Load() {
		return r
	}
	if r := fresh[node]; r != nil && !r.gone.Load() {
		return r
	}
	r := t.row(node.Name)
	if r != nil {
		t.index(node, r)
	}
	return r
}

func loadIndex(p *atomic.Pointer[map[*corev1.Node]*row]) map[*corev1.Node]*row {
	if m := p.Load(); m != nil {
		return *m
	}
	return nil
}

// index adds node → r to the node index, in the small map until it holds
// max(64, √n) entries, then merging both into a new large one without the
// entries whose object was replaced or whose row is gone.
func (t *Table) index(node *corev1.Node, r *row) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.gone.Load() {
		return
	}
	main, fresh := loadIndex(&t.byNode), loadIndex(&t.byNodeFresh)
	if main[node] == r || fresh[node] == r {
		return // another reader indexed it meanwhile
	}
	r.node.Store(node)
	if len(fresh)+1 > max(64, int(math.Sqrt(float64(len(main))))) {
		m := make(map[*corev1.Node]*row, len(main)+len(fresh)+1)
		for _, from := range []map[*corev1.Node]*row{main, fresh} {
			for n, r := range from {
				if !r.gone.Load() && r.node.Load() == n {
					m[n] = r
				}
			}
		}
		t.copied += len(m)
		t.byNode.Store(&m)
		t.byNodeFresh.Store(nil)
		return
	}
	f := make(map[*corev1.Node]*row, len(fresh)+1)
	maps.Copy(f, fresh)
	f[node] = r
	t.copied += len(f)
	t.byNodeFresh.Store(&f)
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
			r.gone.Store(true)
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
	t *Table
	i int
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
	if r := s.t.rowOf(node); r != nil {
		return (*T)(atomic.LoadPointer(&r.vals[s.i]))
	}
	return nil
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
}

// Delete forgets node's value, and the node's row once no column has one:
// call it when the plugin forgets the node.
func (s Slots[T]) Delete(node string) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	if r := s.t.row(node); r != nil {
		atomic.StorePointer(&r.vals[s.i], nil)
		s.t.removeLocked(node)
	}
}
