package nodeslots

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rows(t *Table) int { return len(load(&t.main)) + len(load(&t.fresh)) }

func TestSlots(t *testing.T) {
	s := NewSlots[int](nil)
	if s.Get("n1") != nil {
		t.Fatal("empty slots returned a value")
	}
	one, two := 1, 2
	s.Set("n1", &one)
	s.Set("n2", &two)
	s.Set("n1", &two)
	if got := s.Get("n1"); got == nil || *got != 2 {
		t.Errorf("n1 = %v, want 2", got)
	}
	s.Set("n2", nil)
	if s.Get("n2") != nil {
		t.Error("cleared node still has a value")
	}
	s.Set("n3", nil)
	if n := rows(s.t); n != 2 {
		t.Errorf("%d rows, want 2: clearing keeps a row, clearing an unknown node makes none", n)
	}
	s.Delete("n1")
	s.Delete("n2")
	if s.Get("n1") != nil {
		t.Error("deleted node still has a value")
	}
	if n := rows(s.t); n != 0 {
		t.Errorf("%d rows left after every node was deleted", n)
	}
}

// Plugins of one profile share rows: each sees only its own column, and a
// node's row goes only when no column has a value for it.
func TestColumnsShareRows(t *testing.T) {
	table := &Table{}
	ints, strs := NewSlots[int](table), NewSlots[string](table)
	one, a := 1, "a"
	ints.Set("n1", &one)
	strs.Set("n1", &a)
	if got := ints.Get("n1"); got == nil || *got != 1 {
		t.Errorf("ints n1 = %v, want 1", got)
	}
	if got := strs.Get("n1"); got == nil || *got != "a" {
		t.Errorf("strs n1 = %v, want a", got)
	}
	if n := rows(table); n != 1 {
		t.Fatalf("%d rows for one node, want 1", n)
	}
	ints.Delete("n1")
	if got := strs.Get("n1"); got == nil || *got != "a" {
		t.Errorf("deleting one column's value lost the other's: %v", got)
	}
	if strs.Get("n2") != nil || ints.Get("n1") != nil {
		t.Error("value where none was set")
	}
	strs.Delete("n1")
	if n := rows(table); n != 0 {
		t.Errorf("%d rows after both columns deleted the node", n)
	}
}

// Nodes arriving at start are gathered in a small map: each addition copies
// at most √n rows (or 64), not the whole table.
func TestGrowthInBatches(t *testing.T) {
	s := NewSlots[int](nil)
	const n = 5000
	vals := make([]int, n)
	for i := range vals {
		vals[i] = i
		s.Set(fmt.Sprintf("node-%d", i), &vals[i])
		if f, m := len(load(&s.t.fresh)), len(load(&s.t.main)); f > max(64, isqrt(m)) {
			t.Fatalf("after %d nodes the small map holds %d rows (large one %d)", i+1, f, m)
		}
	}
	// One copy of the whole map per node would be n²/2 = 12.5M rows.
	if limit := 4 * n * isqrt(n); s.t.copied > limit {
		t.Errorf("adding %d nodes copied %d rows, want at most %d", n, s.t.copied, limit)
	}
	for i := range vals {
		if got := s.Get(fmt.Sprintf("node-%d", i)); got == nil || *got != i {
			t.Fatalf("node-%d = %v, want %d", i, got, i)
		}
	}
	// Deleting from either map.
	s.Delete("node-0")
	s.Delete(fmt.Sprintf("node-%d", n-1))
	if s.Get("node-0") != nil || s.Get(fmt.Sprintf("node-%d", n-1)) != nil || rows(s.t) != n-2 {
		t.Errorf("after two deletes: %d rows, want %d", rows(s.t), n-2)
	}
}

func isqrt(m int) int {
	r := 0
	for (r+1)*(r+1) <= m {
		r++
	}
	return r
}

type handle struct{ name string }

type incomparable struct{ f []int }

func TestShared(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h1, h2 := &handle{"a"}, &handle{"b"}
	t1 := Shared(ctx, h1)
	if Shared(ctx, h1) != t1 {
		t.Error("the same handle got two tables")
	}
	if Shared(ctx, h2) == t1 {
		t.Error("two profiles share a table")
	}
	if Shared(ctx, nil) == Shared(ctx, nil) {
		t.Error("nil handles share a table")
	}
	if a, b := Shared(ctx, incomparable{}), Shared(ctx, incomparable{}); a == nil || a == b {
		t.Error("incomparable handles: want a table each")
	}
	cancel()
	// AfterFunc runs in its own goroutine: the handle is forgotten soon. The
	// loop sleeps between looks, so that goroutine gets a CPU however busy
	// the machine is (a loop spinning a million times could finish first on
	// a loaded CI machine); the deadline only bounds a failure.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, ok := shared.Load(h1); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the table outlived its framework's context")
		}
	}
}

// A plugin past maxColumns on a handle still works, with a table of its own.
func TestFullTable(t *testing.T) {
	table := &Table{}
	cols := make([]Slots[int], maxColumns+1)
	for i := range cols {
		cols[i] = NewSlots[int](table)
	}
	for i := range cols {
		v := i
		cols[i].Set("n1", &v)
	}
	for i := range cols {
		if got := cols[i].Get("n1"); got == nil || *got != i {
			t.Errorf("column %d: n1 = %v, want %d", i, got, i)
		}
	}
	if cols[maxColumns].t == table {
		t.Error("the extra column is in the full table")
	}
}

// readers runs read in n goroutines until the returned stop is called.
func readers(n int, read func()) (stop func()) {
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
					read()
				}
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

// Readers run while writers add nodes and swap values (go test -race).
func TestSlotsConcurrentReaders(t *testing.T) {
	table := &Table{}
	s, other := NewSlots[int](table), NewSlots[int](table)
	stop := readers(4, func() {
		if v := s.Get("n7"); v != nil && *v < 0 {
			t.Error("negative value")
		}
		other.Get("m3")
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 1000; i++ {
			v := i
			other.Set(fmt.Sprintf("m%d", i%200), &v)
			if i%50 == 0 {
				other.Delete("m3")
			}
		}
	}()
	for i := 0; i < 1000; i++ {
		v := i
		s.Set([]string{"n1", "n7", "n9"}[i%3], &v)
		if i%100 == 0 {
			s.Delete("n9")
		}
	}
	wg.Wait()
	stop()
	if got := s.Get("n7"); got == nil || *got != 997 {
		t.Errorf("n7 = %v, want 997", got)
	}
}

// A node's value stays visible while other nodes arrive and the small map
// is merged into the large one (readers take no lock): readers keep asking
// for the latest node set, which is in the small map until a merge moves it.
func TestRowsStayVisibleThroughMerges(t *testing.T) {
	s := NewSlots[int](nil)
	names := make([]string, 20000)
	for i := range names {
		names[i] = fmt.Sprintf("node-%d", i)
	}
	one := 1
	s.Set(names[0], &one)
	var latest atomic.Int64 // the last node whose Set returned
	var missed sync.Once
	stop := readers(2, func() {
		if i := latest.Load(); s.Get(names[i]) == nil {
			missed.Do(func() { t.Errorf("%s missing after it was set", names[i]) })
		}
	})
	for i := 1; i < len(names); i++ {
		s.Set(names[i], &one)
		latest.Store(int64(i))
	}
	stop()
}

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// Of finds a node's value by the object the scheduler hands out, and stays
// right as the object is replaced (a node update), the value changes, and
// the node's row goes and comes back.
func TestOf(t *testing.T) {
	s := NewSlots[int](nil)
	one, two := 1, 2
	n1 := node("n1")
	if s.Of(n1) != nil {
		t.Fatal("value for a node never set")
	}
	s.Set("n1", &one)
	if got := s.Of(n1); got == nil || *got != 1 {
		t.Fatalf("Of(n1) = %v, want 1", got)
	}
	if ix := s.t.index.Load(); ix == nil || ix.live != 1 || ix.used != 1 {
		t.Errorf("index after one lookup: %+v, want one live entry", ix)
	}
	s.Set("n1", &two)
	if got := s.Of(n1); got == nil || *got != 2 {
		t.Errorf("Of(n1) after Set = %v, want 2", got)
	}
	// The node changed: the scheduler hands a new object.
	n1b := node("n1")
	if got := s.Of(n1b); got == nil || *got != 2 {
		t.Errorf("Of(new n1 object) = %v, want 2", got)
	}
	// The row goes and a new one comes: the old index entries must not
	// lead to the old row.
	s.Delete("n1")
	if got := s.Of(n1b); got != nil {
		t.Errorf("Of(n1) after Delete = %v, want none", *got)
	}
	s.Set("n1", &one)
	if got := s.Of(n1b); got == nil || *got != 1 {
		t.Errorf("Of(n1) after Delete and Set = %v, want 1", got)
	}
	if got := s.Of(n1); got == nil || *got != 1 {
		t.Errorf("Of(old n1 object) after Delete and Set = %v, want 1", got)
	}
	// A name not in the table is never indexed under another node's row.
	if s.Of(node("n2")) != nil {
		t.Error("value for n2, never set")
	}
}

// Replaced node objects leave the index: a node updated many times does not
// keep its old objects alive or grow the index, and every node's value is
// found all along.
func TestIndexDropsReplacedObjects(t *testing.T) {
	s := NewSlots[int](nil)
	const nodes = 500
	vals := make([]int, nodes)
	for i := range vals {
		vals[i] = i
		s.Set(fmt.Sprintf("n%d", i), &vals[i])
	}
	for round := 0; round < 20; round++ {
		for i := range vals {
			if got := s.Of(node(fmt.Sprintf("n%d", i))); got == nil || *got != i {
				t.Fatalf("round %d: n%d = %v, want %d", round, i, got, i)
			}
		}
	}
	// 10000 objects were looked up; the index holds the latest per node,
	// and its size follows the nodes, not the objects.
	ix := s.t.index.Load()
	if ix.live != nodes {
		t.Errorf("index holds %d live objects for %d nodes", ix.live, nodes)
	}
	held := 0
	for i := range ix.entries {
		if n := ix.entries[i].node.Load(); n != nil && n != tombstone {
			held++
		}
	}
	if held != nodes {
		t.Errorf("index entries hold %d objects for %d nodes", held, nodes)
	}
	if len(ix.entries) > max(minIndex, 6*nodes) {
		t.Errorf("index has %d entries for %d nodes", len(ix.entries), nodes)
	}
	// Rebuilds copy live entries only, at most two per object entered,
	// and growing by doubling adds at most one.
	if s.t.copied > 3*20*nodes {
		t.Errorf("index rebuilds copied %d entries for %d lookups of new objects", s.t.copied, 20*nodes)
	}
}

// Every node a lookup enters is found by its object afterwards, with the
// latest value, through rebuilds of the index; values of deleted nodes are
// not.
func TestIndexFindsEveryEntered(t *testing.T) {
	s := NewSlots[int](nil)
	const nodes = 3000
	objs := make([]*corev1.Node, nodes)
	vals := make([]int, nodes)
	for i := range objs {
		objs[i] = node(fmt.Sprintf("n%d", i))
		vals[i] = i
		s.Set(objs[i].Name, &vals[i])
		if got := s.Of(objs[i]); got == nil || *got != i {
			t.Fatalf("n%d = %v, want %d", i, got, i)
		}
	}
	for i := range objs {
		if i%3 == 0 {
			s.Delete(objs[i].Name)
			continue
		}
		v := -i
		s.Set(objs[i].Name, &v)
	}
	ix := s.t.index.Load()
	for i, n := range objs {
		e := ix.find(n)
		switch {
		case i%3 == 0 && e != nil:
			t.Errorf("n%d: deleted, still in the index", i)
		case i%3 != 0 && (e == nil || *(*int)(e.vals[0]) != -i):
			t.Errorf("n%d: index entry %v, want one with %d", i, e, -i)
		}
	}
}

// Readers finding rows by object while writers set, delete and re-add
// nodes and new objects arrive (run with -race).
func TestOfConcurrent(t *testing.T) {
	s := NewSlots[int](nil)
	objs := make([]atomic.Pointer[corev1.Node], 8)
	for i := range objs {
		objs[i].Store(node(fmt.Sprintf("n%d", i)))
	}
	var wrong atomic.Int64
	stop := readers(4, func() {
		for i := range objs {
			if v := s.Of(objs[i].Load()); v != nil && *v%8 != i {
				wrong.Add(1)
			}
		}
	})
	for k := 0; k < 5000; k++ {
		i := k % 8
		v := k - k%8 + i
		s.Set(fmt.Sprintf("n%d", i), &v)
		if k%7 == 0 {
			s.Delete(fmt.Sprintf("n%d", (k/7)%8))
		}
		if k%3 == 0 {
			objs[i].Store(node(fmt.Sprintf("n%d", i)))
		}
	}
	stop()
	if n := wrong.Load(); n > 0 {
		t.Errorf("%d lookups returned another node's value", n)
	}
	for i := range objs {
		v := 100 + i
		s.Set(fmt.Sprintf("n%d", i), &v)
		if got := s.Of(objs[i].Load()); got == nil || *got != v {
			t.Errorf("n%d = %v after the writers stopped, want %d", i, got, v)
		}
	}
}

// An index entry is one cache line, and so is where each starts: a node's
// lookup reads one line for every plugin's value.
func TestEntryIsOneCacheLine(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 64 {
		t.Errorf("entry is %d bytes, want 64", n)
	}
	for size := minIndex; size <= 1<<17; size *= 2 {
		if p := uintptr(unsafe.Pointer(&newIndex(size).entries[0])); p%64 != 0 {
			t.Errorf("an index of %d entries starts at %#x, not on a cache line", size, p)
		}
	}
}

// An entry taken out stays out until its index is replaced: a reader that
// found it for its object, and reads the values a moment later, must not
// read another node's values from it.
func TestEntriesNotReused(t *testing.T) {
	s := NewSlots[int](nil)
	one := 1
	s.Set("n0", &one)
	old := node("n0")
	s.Of(old)
	ix := s.t.index.Load()
	e := ix.find(old)
	s.Of(node("n0")) // the node changed: old's entry is taken out
	if e.node.Load() != tombstone {
		t.Fatal("the replaced object's entry is still in use")
	}
	// Objects whose probe starts at the taken-out entry.
	at := uint64(uintptr(unsafe.Pointer(e))-uintptr(unsafe.Pointer(&ix.entries[0]))) / uint64(unsafe.Sizeof(entry{}))
	for i, found := 1, 0; found < 3; i++ {
		n := node(fmt.Sprintf("n%d", i))
		if ix.first(n) != at {
			continue
		}
		found++
		s.Set(n.Name, &one)
		if got := s.Of(n); got == nil || *got != 1 {
			t.Fatalf("%s = %v, want 1", n.Name, got)
		}
		if s.t.index.Load() != ix {
			t.Fatal("the index was replaced")
		}
		if n := e.node.Load(); n != tombstone {
			t.Fatalf("the entry taken out was reused for %s", n.Name)
		}
	}
}
