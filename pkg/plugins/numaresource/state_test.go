package numaresource

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
)

func boundPod(name, node, status string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)},
		Spec:       corev1.PodSpec{NodeName: node},
	}
	if status != "" {
		p.Annotations = map[string]string{extension.AnnotationResourceStatus: status}
	}
	return p
}

func TestAssumeNeverDoubleAllocates(t *testing.T) {
	a := NewState()
	if err := a.Assume("n1", "a", Allocation{CPUs: cpuset.New(0, 1)}); err != nil {
		t.Fatal(err)
	}
	err := a.Assume("n1", "b", Allocation{CPUs: cpuset.New(1, 2)})
	var conflict *Conflict
	if !errors.As(err, &conflict) || conflict.Holder != "a" || !conflict.CPUs.Equals(cpuset.New(1)) {
		t.Fatalf("overlap: got %v, want a conflict on CPU 1 held by a", err)
	}
	if !a.Held("n1").Equals(cpuset.New(0, 1)) {
		t.Errorf("a failed Assume recorded something: held %s", a.Held("n1"))
	}
	// The same CPUs on another node are another thing.
	if err := a.Assume("n2", "b", Allocation{CPUs: cpuset.New(1, 2)}); err != nil {
		t.Errorf("different node: %v", err)
	}
	// Re-assuming a pod replaces its CPUs (and may move it).
	if err := a.Assume("n1", "a", Allocation{CPUs: cpuset.New(3)}); err != nil {
		t.Fatal(err)
	}
	if !a.Held("n1").Equals(cpuset.New(3)) {
		t.Errorf("replace: held %s, want 3", a.Held("n1"))
	}
	a.Forget("a")
	a.Forget("a") // twice is fine
	if !a.Held("n1").IsEmpty() {
		t.Errorf("after Forget: held %s", a.Held("n1"))
	}
}

func TestObservePodRebuildsAfterRestart(t *testing.T) {
	pods := []*corev1.Pod{
		boundPod("web-0", "n1", `{"cpuset":"0-1"}`),
		boundPod("web-1", "n1", `{"cpuset":"2-3","numaNodeResources":[{"node":0,"resources":{"cpu":"2"}}]}`),
		boundPod("plain", "n1", ""),
		boundPod("other", "n2", `{"cpuset":"0-1"}`),
	}
	a := NewState()
	for _, p := range pods {
		if err := a.ObservePod(p); err != nil {
			t.Fatal(err)
		}
	}
	if !a.Held("n1").Equals(cpuset.New(0, 1, 2, 3)) || !a.Held("n2").Equals(cpuset.New(0, 1)) {
		t.Fatalf("held n1 %s, n2 %s", a.Held("n1"), a.Held("n2"))
	}
	// A restarted scheduler sees the same pods and ends in the same state.
	b := NewState()
	for i := len(pods) - 1; i >= 0; i-- {
		if err := b.ObservePod(pods[i]); err != nil {
			t.Fatal(err)
		}
	}
	if !b.Held("n1").Equals(a.Held("n1")) {
		t.Errorf("rebuilt %s, want %s", b.Held("n1"), a.Held("n1"))
	}

	// A pod whose annotation turns malformed keeps what it held.
	bad := boundPod("web-0", "n1", `{"cpuset":"0-"}`)
	if err := a.ObservePod(bad); err == nil || !strings.Contains(err.Error(), extension.AnnotationResourceStatus) {
		t.Errorf("malformed annotation: %v", err)
	}
	if !a.Held("n1").Contains(0) {
		t.Error("a malformed update dropped the pod's CPUs")
	}
	// A pod claiming CPUs another pod holds is a conflict, not a takeover.
	if err := a.ObservePod(boundPod("intruder", "n1", `{"cpuset":"1"}`)); err == nil {
		t.Error("two pods recorded on CPU 1")
	}
	// A finished pod frees its CPUs.
	done := boundPod("web-1", "n1", `{"cpuset":"2-3"}`)
	done.Status.Phase = corev1.PodSucceeded
	if err := a.ObservePod(done); err != nil {
		t.Fatal(err)
	}
	if !a.Held("n1").Equals(cpuset.New(0, 1)) {
		t.Errorf("after completion: held %s", a.Held("n1"))
	}
}

// Binding cycles run in parallel: under -race, many pods assuming CPUs at
// once never end up sharing one.
func TestAssumeConcurrently(t *testing.T) {
	a := NewState()
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Pods ask for overlapping pairs: only some can win.
			_ = a.Assume("n1", types.UID(fmt.Sprint(i)), Allocation{CPUs: cpuset.New(i%32, (i+1)%32)})
		}(i)
	}
	wg.Wait()
	seen := map[int]types.UID{}
	a.mu.RLock()
	defer a.mu.RUnlock()
	for uid, alloc := range a.nodes["n1"].pods {
		for _, c := range alloc.CPUs.List() {
			if other, ok := seen[c]; ok {
				t.Errorf("CPU %d held by %s and %s", c, other, uid)
			}
			seen[c] = uid
		}
	}
}

func TestAvailable(t *testing.T) {
	in := &extension.NUMAInfo{
		CPUManagerPolicy: extension.KubeletCPUManagerPolicy{Policy: "static", ReservedCPUs: "0,4"},
		PodCPUAllocs:     []extension.PodCPUAlloc{{Namespace: "default", Name: "pinned", CPUSet: "1"}},
		NUMANodes:        []extension.NUMANodeInfo{{ID: 0, CPUs: "0-7", MemoryBytes: 1 << 30}},
	}
	for id := 0; id < 8; id++ {
		in.CPUTopology.Detail = append(in.CPUTopology.Detail, extension.CPUInfo{ID: int32(id), Core: int32(id % 4)})
	}
	data, err := in.ConfigMapData()
	if err != nil {
		t.Fatal(err)
	}
	info, err := extension.ParseNUMAInfo(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "n1-numa-info"}, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	if got := Allocatable(info).Difference(cpuset.New(2)); !got.Equals(cpuset.New(3, 5, 6, 7)) {
		t.Errorf("available = %s, want 3,5-7 (all minus reserved 0,4, kubelet-pinned 1, held 2)", got)
	}
}
