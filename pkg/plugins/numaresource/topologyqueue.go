package numaresource

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// topologyQueue parses topologies outside the informer's event handler, and
// only the latest version of each: a node rewriting its topology faster
// than it parses queues one parse, not one per version. In the handler, each
// parse held up every event behind it, so a node writing a costly
// ConfigMap every two seconds kept the scheduler busy long after it stopped.
type topologyQueue struct {
	q     workqueue.TypedInterface[string]
	store cache.Store
	// apply records the object now stored under key (nil: none).
	apply func(key string, obj any)

	mu sync.Mutex
	// dirty are keys with an event not yet applied, by the event's number:
	// a key leaves only once a parse has seen its latest event.
	dirty map[string]uint64
	seq   uint64
}

func newTopologyQueue(store cache.Store, apply func(key string, obj any)) *topologyQueue {
	return &topologyQueue{q: workqueue.NewTyped[string](), store: store, apply: apply, dirty: map[string]uint64{}}
}

// watch queues the events of inf's objects that want accepts and starts the
// worker until ctx ends. The returned function says whether every object
// the informer listed has been applied.
func (t *topologyQueue) watch(ctx context.Context, inf cache.SharedIndexInformer, want func(any) bool) (cache.InformerSynced, error) {
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if !want(obj) {
			return
		}
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			t.add(key)
		}
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	if err != nil {
		return nil, err
	}
	go func() {
		<-ctx.Done()
		t.q.ShutDown()
	}()
	go t.run()
	return func() bool { return reg.HasSynced() && t.drained() }, nil
}

func (t *topologyQueue) add(key string) {
	t.mu.Lock()
	t.seq++
	t.dirty[key] = t.seq
	t.mu.Unlock()
	t.q.Add(key)
}

func (t *topologyQueue) run() {
	for {
		key, quit := t.q.Get()
		if quit {
			return
		}
		t.mu.Lock()
		seen := t.dirty[key]
		t.mu.Unlock()
		obj, ok, err := t.store.GetByKey(key)
		if err != nil || !ok {
			obj = nil
		}
		t.apply(key, obj)
		t.mu.Lock()
		if t.dirty[key] == seen {
			delete(t.dirty, key)
		}
		t.mu.Unlock()
		t.q.Done(key)
	}
}

func (t *topologyQueue) drained() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.dirty) == 0
}
