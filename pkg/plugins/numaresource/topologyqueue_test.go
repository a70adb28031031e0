package numaresource

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// A node that rewrites its topology while one parse runs gets one more
// parse, of its latest version, not one per version; and the queue says it
// is drained only once that version is applied.
func TestTopologyQueueLatestWins(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	var mu sync.Mutex
	var applied []string
	release := make(chan struct{})
	q := newTopologyQueue(store, func(key string, obj any) {
		<-release // a slow parse
		mu.Lock()
		defer mu.Unlock()
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			applied = append(applied, cm.ResourceVersion)
		} else {
			applied = append(applied, "deleted")
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-ctx.Done(); q.q.ShutDown() }()
	go q.run()

	write := func(rv string) {
		_ = store.Update(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "n1-numa-info", ResourceVersion: rv}})
		q.add("kube-system/n1-numa-info")
	}
	write("1")
	// The worker takes version 1 and blocks in its parse; 99 more arrive.
	time.Sleep(20 * time.Millisecond)
	for v := 2; v <= 100; v++ {
		write(string(rune('0' + v%10)))
	}
	write("last")
	if q.drained() {
		t.Fatal("drained with versions not applied")
	}
	close(release)
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return q.drained(), nil }); err != nil {
		t.Fatal("never drained")
	}
	mu.Lock()
	if len(applied) > 2 || applied[len(applied)-1] != "last" {
		t.Errorf("applied %v, want at most the first version and then the last", applied)
	}
	mu.Unlock()

	// A deletion applies "nothing stored".
	_ = store.Delete(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "n1-numa-info"}})
	q.add("kube-system/n1-numa-info")
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return q.drained(), nil }); err != nil {
		t.Fatal("never drained")
	}
	mu.Lock()
	defer mu.Unlock()
	if applied[len(applied)-1] != "deleted" {
		t.Errorf("applied %v after the deletion", applied)
	}
}
