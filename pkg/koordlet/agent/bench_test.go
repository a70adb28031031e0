package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/topologytest"
	koordfake "github.com/koord-project/koord/pkg/client/clientset/versioned/fake"
)

// benchAgent is an agent on a 2×2×16×2 fixture machine with 100 running
// Burstable pods, each with a fixture cgroup (cpuset, cpuacct, memory) and
// one container; ten of them are LSR pods bound to 2 CPUs.
func benchAgent(b *testing.B) (*Agent, context.Context) {
	sysfs, procfs, err := topologytest.WriteSysfs(b.TempDir(), 2, 2, 16, 2, 64<<30)
	if err != nil {
		b.Fatal(err)
	}
	cgroupRoot := b.TempDir()
	objs := []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n1"}}}
	for i := 0; i < 100; i++ {
		uid := types.UID(fmt.Sprintf("uid-%03d", i))
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("p%03d", i), UID: uid},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", ContainerID: fmt.Sprintf("containerd://c%03d", i)}}},
		}
		if i < 10 {
			p.Annotations = map[string]string{extension.AnnotationResourceStatus: fmt.Sprintf(`{"cpuset":"%d,%d"}`, i, i+64)}
		}
		objs = append(objs, p)
		podDir := filepath.Join("kubepods/burstable", "pod"+string(uid))
		for file, content := range map[string]string{
			"cpuset/" + podDir + "/cpuset.cpus":                       "0-127\n",
			"cpuset/" + podDir + fmt.Sprintf("/c%03d/cpuset.cpus", i): "0-127\n",
			"cpuacct/" + podDir + "/cpuacct.usage":                    "123456789\n",
			"memory/" + podDir + "/memory.usage_in_bytes":             "104857600\n",
			"memory/" + podDir + "/memory.stat":                       "total_inactive_file 1048576\n",
		} {
			path := filepath.Join(cgroupRoot, file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	client := fake.NewClientset(objs...)
	a, err := New(client, koordfake.NewSimpleClientset(), Options{NodeName: "n1", SysfsRoot: sysfs, ProcfsRoot: procfs, CgroupRoot: cgroupRoot,
		CollectInterval: time.Second}, prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	a.start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
		b.Fatal("caches did not sync")
	}
	a.reconcile(ctx) // publish once and find the cgroups; steady state from here
	a.collect(ctx, time.Now())
	return a, ctx
}

// koordlet's steady state with 100 pods, one part at a time: a reconcile
// (every second: topology unchanged, cpusets already right), a usage sample
// (every 5 s by default) and a sample with a NodeMetric report (every 60 s).
func BenchmarkSteadyState100Pods(b *testing.B) {
	a, ctx := benchAgent(b)
	b.Run("Reconcile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a.reconcile(ctx)
		}
	})
	// Every 10th reconcile re-reads every pod's cgroups.
	b.Run("ReconcileFullCheck", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a.lastChecked = time.Time{}
			a.reconcile(ctx)
		}
	})
	b.Run("Collect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a.nextReport = time.Now().Add(time.Hour)
			a.collect(ctx, time.Now())
		}
	})
	b.Run("CollectAndReport", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a.nextReport = time.Time{}
			a.collect(ctx, time.Now())
		}
	})
}
