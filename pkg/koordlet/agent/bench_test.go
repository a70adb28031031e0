package agent

import (
	"context"
	"encoding/json"
	"fmt"
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
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/topologytest"
	koordfake "github.com/koord-project/koord/pkg/client/clientset/versioned/fake"
	"github.com/koord-project/koord/pkg/features"
	"github.com/koord-project/koord/pkg/koordlet/cgroup/cgrouptest"
)

// benchAgent is an agent on a 2×2×16×2 fixture machine with 100 running
// pods, each with a fixture cgroup and one container; ten of them are LSR
// pods bound to 2 CPUs. Without strategies, the other 90 are Burstable LS
// pods on a v1 tree with cpuset, cpuacct and memory files. With every
// strategy (all gates on and a NodeSLO enabling every strategy), 60 LS pods
// have a CPU limit (CPU burst) and 30 are BE pods on batch resources, on a
// v2 tree (so that memory QoS has its files too).
func benchAgent(b *testing.B, allStrategies bool) (*Agent, context.Context) {
	sysfs, procfs, err := topologytest.WriteSysfs(b.TempDir(), 2, 2, 16, 2, 64<<30)
	if err != nil {
		b.Fatal(err)
	}
	cgroupRoot := b.TempDir()
	objs := []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n1"}}}
	var koordObjs []runtime.Object
	for _, d := range []string{"kubepods", "kubepods/burstable", "kubepods/besteffort"} {
		cgrouptest.WriteCgroup(b, cgroupRoot, allStrategies, d, "0-127")
	}
	for i := 0; i < 100; i++ {
		uid := types.UID(fmt.Sprintf("uid-%03d", i))
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("p%03d", i), UID: uid},
			Spec: corev1.PodSpec{NodeName: "n1", SchedulerName: "koord-scheduler", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", ContainerID: fmt.Sprintf("containerd://c%03d", i)}}},
		}
		qosDir := "kubepods/burstable"
		switch {
		case i < 10:
			p.Annotations = map[string]string{extension.AnnotationResourceStatus: fmt.Sprintf(`{"cpuset":"%d,%d"}`, i, i+64)}
		case allStrategies && i < 70:
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		case allStrategies:
			p.Labels = map[string]string{extension.LabelPodQoS: "BE"}
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{extension.BatchCPU: resource.MustParse("500"), extension.BatchMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{extension.BatchCPU: resource.MustParse("1000"), extension.BatchMemory: resource.MustParse("2Gi")}}
			qosDir = "kubepods/besteffort"
		}
		objs = append(objs, p)
		podDir := filepath.Join(qosDir, "pod"+string(uid))
		cgrouptest.WriteCgroup(b, cgroupRoot, allStrategies, podDir, "0-127")
		cgrouptest.WriteCgroup(b, cgroupRoot, allStrategies, filepath.Join(podDir, fmt.Sprintf("c%03d", i)), "0-127")
	}
	gates := features.New()
	if allStrategies {
		if err := gates.Set("BECPUSuppress=true,BECPUEvict=true,BEMemoryEvict=true,CPUBurst=true,CgroupReconcile=true,GroupIdentity=true,BatchResource=true"); err != nil {
			b.Fatal(err)
		}
		slo := &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
		if err := json.Unmarshal([]byte(cgrouptest.EveryStrategy), &slo.Spec); err != nil {
			b.Fatal(err)
		}
		koordObjs = append(koordObjs, slo)
	}
	client := fake.NewClientset(objs...)
	a, err := New(client, koordfake.NewSimpleClientset(koordObjs...), Options{NodeName: "n1", SysfsRoot: sysfs, ProcfsRoot: procfs, CgroupRoot: cgroupRoot,
		CollectInterval: time.Second, Gates: gates}, prometheus.NewRegistry())
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
	a.collect(ctx, time.Now()) // a second sample: rates, and the strategies decide
	return a, ctx
}

// koordlet's steady state with 100 pods, one part at a time: a reconcile
// (every second: topology unchanged, cgroups already right), the same with
// every cgroup re-read (every 10th reconcile), a usage sample (every 5 s by
// default: the strategies that act on usage decide on it, and what they
// decide is written) and a sample with a NodeMetric report (every 60 s);
// with no QoS strategy, and with every one on.
func BenchmarkSteadyState100Pods(b *testing.B) {
	for _, all := range []bool{false, true} {
		b.Run(map[bool]string{false: "Strategies=none", true: "Strategies=all"}[all], func(b *testing.B) {
			a, ctx := benchAgent(b, all)
			b.Run("Reconcile", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					a.reconcile(ctx)
				}
			})
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
		})
	}
}
