package extension

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// bigServerInfo is 2 sockets × 2 NUMA nodes × 16 cores × 2 threads (128 CPUs),
// numbered like Linux does: thread siblings are N and N+64.
func bigServerInfo() *NUMAInfo {
	info := &NUMAInfo{CPUManagerPolicy: KubeletCPUManagerPolicy{Policy: KubeletCPUManagerPolicyNone}}
	for id := 0; id < 128; id++ {
		core := id % 64
		node := core / 16
		info.CPUTopology.Detail = append(info.CPUTopology.Detail, CPUInfo{ID: int32(id), Core: int32(core), Socket: int32(node / 2), Node: int32(node)})
	}
	for n := 0; n < 4; n++ {
		info.NUMANodes = append(info.NUMANodes, NUMANodeInfo{ID: int32(n), CPUs: fmt.Sprintf("%d-%d,%d-%d", n*16, n*16+15, 64+n*16, 64+n*16+15), MemoryBytes: 64 << 30})
	}
	return info
}

func BenchmarkParseNUMAInfo(b *testing.B) {
	for name, info := range map[string]*NUMAInfo{"16cpu": twoSocketInfo(), "128cpu": bigServerInfo()} {
		data, err := info.ConfigMapData()
		if err != nil {
			b.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "n-numa-info"}, Data: data}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseNUMAInfo(cm); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGetResourceStatus(b *testing.B) {
	ann := map[string]string{AnnotationResourceStatus: `{"cpuset":"0-3,64-67","numaNodeResources":[{"node":0,"resources":{"cpu":"8","memory":"16Gi"}}]}`}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := GetResourceStatus(ann); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetResourceSpec(b *testing.B) {
	ann := map[string]string{AnnotationResourceSpec: `{"preferredCPUBindPolicy":"FullPCPUs","preferredCPUExclusivePolicy":"PCPULevel"}`}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := GetResourceSpec(ann); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetPodQoSClass(b *testing.B) {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	pods := map[string]*corev1.Pod{
		"label":    {ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelPodQoS: "LSR"}}},
		"fallback": {Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}}},
	}
	for name, pod := range pods {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := GetPodQoSClass(pod); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// hostileNUMAInfo is the ConfigMap a compromised koordlet could write before
// the lists were capped: 16,000 CPUs, and pools and pins that each name all
// of them (3,000 of each, about 1 MB).
func hostileNUMAInfo() *corev1.ConfigMap {
	info := &NUMAInfo{CPUManagerPolicy: KubeletCPUManagerPolicy{Policy: KubeletCPUManagerPolicyNone}}
	for id := 0; id < 16000; id++ {
		info.CPUTopology.Detail = append(info.CPUTopology.Detail, CPUInfo{ID: int32(id), Core: int32(id), Node: 0})
	}
	info.NUMANodes = []NUMANodeInfo{{ID: 0, CPUs: "0-15999", MemoryBytes: 1 << 30}}
	for i := 0; i < 3000; i++ {
		info.CPUSharedPools = append(info.CPUSharedPools, CPUSharedPool{CPUSet: "0-15999"})
		info.PodCPUAllocs = append(info.PodCPUAllocs, PodCPUAlloc{Namespace: "x", Name: fmt.Sprint("p", i), UID: fmt.Sprint(i), CPUSet: "0-15999"})
	}
	data, err := info.ConfigMapData()
	if err != nil {
		panic(err)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: NUMAInfoNamespace, Name: "hostile-numa-info"}, Data: data}
}

// BenchmarkParseNUMAInfoHostile: refused after the first overlapping entry
// (12 s a parse here before the lists were capped; now docs/benchmarks.md).
func BenchmarkParseNUMAInfoHostile(b *testing.B) {
	cm := hostileNUMAInfo()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseNUMAInfo(cm); err == nil {
			b.Fatal("the hostile ConfigMap was accepted")
		}
	}
}
