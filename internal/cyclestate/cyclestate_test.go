package cyclestate

import (
	"sync"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

type data struct{ n int }

func (d *data) Clone() fwk.StateData { return &data{n: d.n} }

// Only the latest cycle state written finds its data; a clone of it, an
// older one and one never written do not.
func TestLatest(t *testing.T) {
	var l Latest[*data]
	first, second := framework.NewCycleState(), framework.NewCycleState()
	if _, ok := l.In(first); ok {
		t.Fatal("data before anything was written")
	}
	l.Wrote(first, &data{1})
	if v, ok := l.In(first); !ok || v.n != 1 {
		t.Fatalf("first: %v, %v", v, ok)
	}
	if _, ok := l.In(first.Clone()); ok {
		t.Error("a clone found the data: a PreFilterExtensions change to the clone would be missed")
	}
	l.Wrote(second, &data{2})
	if v, ok := l.In(first); ok {
		t.Errorf("the earlier cycle state found %v after the next cycle wrote", v)
	}
	if v, ok := l.In(second); !ok || v.n != 2 {
		t.Errorf("second: %v, %v", v, ok)
	}
}

// Filter runs on many goroutines while the next cycle may start (run with
// -race): every read is the data of the cycle state asked for, or nothing.
func TestLatestConcurrent(t *testing.T) {
	var l Latest[*data]
	states := make([]*framework.CycleState, 50)
	for i := range states {
		states[i] = framework.NewCycleState()
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 20000 {
				i := (k + w) % len(states)
				if v, ok := l.In(states[i]); ok && v.n != i {
					t.Errorf("cycle state %d found data %d", i, v.n)
					return
				}
			}
		}()
	}
	for k := range 5000 {
		i := k % len(states)
		l.Wrote(states[i], &data{i})
	}
	wg.Wait()
}
