package extension

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/cpuset"
)

// twoSocketInfo is a 2-socket, 2-NUMA-node, 4-cores-per-socket, SMT-2 server
// laid out the way Linux numbers it: thread siblings are N and N+8.
func twoSocketInfo() *NUMAInfo {
	info := &NUMAInfo{
		CPUBasicInfo:     CPUBasicInfo{CPUModel: "Test CPU", HyperThreadEnabled: true},
		CPUManagerPolicy: KubeletCPUManagerPolicy{Policy: KubeletCPUManagerPolicyStatic, ReservedCPUs: "0,8"},
		PodCPUAllocs:     []PodCPUAlloc{{Namespace: "default", Name: "pinned", UID: "u1", CPUSet: "1,9"}},
	}
	for id := 0; id < 16; id++ {
		core := id % 8
		socket := core / 4
		info.CPUTopology.Detail = append(info.CPUTopology.Detail, CPUInfo{ID: int32(id), Core: int32(core), Socket: int32(socket), Node: int32(socket)})
	}
	info.NUMANodes = []NUMANodeInfo{{ID: 0, CPUs: "0-3,8-11", MemoryBytes: 32 << 30}, {ID: 1, CPUs: "4-7,12-15", MemoryBytes: 32 << 30}}
	info.CPUSharedPools = []CPUSharedPool{{Socket: 0, Node: 0, CPUSet: "2-3,10-11"}, {Socket: 1, Node: 1, CPUSet: "4-7,12-15"}}
	return info
}

func numaInfoCM(t *testing.T, mutate func(map[string]string)) *corev1.ConfigMap {
	t.Helper()
	data, err := twoSocketInfo().ConfigMapData()
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(data)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "n1-numa-info"}, Data: data}
}

func TestParseNUMAInfo(t *testing.T) {
	info, err := ParseNUMAInfo(numaInfoCM(t, nil))
	if err != nil {
		t.Fatalf("valid ConfigMap rejected: %v", err)
	}
	if got := info.AllCPUs().Size(); got != 16 {
		t.Errorf("AllCPUs = %d CPUs, want 16", got)
	}
	if !info.ReservedCPUs().Equals(cpuset.New(0, 8)) || !info.KubeletPinnedCPUs().Equals(cpuset.New(1, 9)) {
		t.Errorf("reserved %s, pinned %s; want 0,8 and 1,9", info.ReservedCPUs(), info.KubeletPinnedCPUs())
	}

	// Only the two required keys: the rest default to no CPU manager.
	minimal := numaInfoCM(t, func(d map[string]string) {
		for _, k := range []string{NUMAInfoKeyCPUBasicInfo, NUMAInfoKeyCPUManagerPolicy, NUMAInfoKeyPodCPUAllocs, NUMAInfoKeyCPUSharedPools} {
			delete(d, k)
		}
	})
	info, err = ParseNUMAInfo(minimal)
	if err != nil {
		t.Fatalf("minimal ConfigMap rejected: %v", err)
	}
	if info.CPUManagerPolicy.Policy != KubeletCPUManagerPolicyNone {
		t.Errorf("absent cpu-manager-policy = %q, want none", info.CPUManagerPolicy.Policy)
	}

	bad := []struct {
		name, key, want string
		mutate          func(map[string]string)
	}{
		{"missing topology", NUMAInfoKeyCPUTopology, "missing", func(d map[string]string) { delete(d, NUMAInfoKeyCPUTopology) }},
		{"not JSON", NUMAInfoKeyNUMANodes, "invalid JSON", func(d map[string]string) { d[NUMAInfoKeyNUMANodes] = "[{" }},
		{"duplicate CPU", NUMAInfoKeyCPUTopology, "cpu 0 listed twice", func(d map[string]string) {
			d[NUMAInfoKeyCPUTopology] = `{"detail":[{"id":0},{"id":0}]}`
		}},
		{"nodes disagree with topology", NUMAInfoKeyNUMANodes, "differ from the CPUs", func(d map[string]string) {
			d[NUMAInfoKeyNUMANodes] = `[{"id":0,"cpus":"0-7","memoryBytes":1},{"id":1,"cpus":"8-15","memoryBytes":1}]`
		}},
		{"bad cpuset", NUMAInfoKeyNUMANodes, `cpus "0-"`, func(d map[string]string) {
			d[NUMAInfoKeyNUMANodes] = `[{"id":0,"cpus":"0-","memoryBytes":1}]`
		}},
		{"reserved CPU absent", NUMAInfoKeyCPUManagerPolicy, "does not have", func(d map[string]string) {
			d[NUMAInfoKeyCPUManagerPolicy] = `{"policy":"static","reservedCPUs":"64"}`
		}},
		{"unknown policy", NUMAInfoKeyCPUManagerPolicy, `"dynamic"`, func(d map[string]string) {
			d[NUMAInfoKeyCPUManagerPolicy] = `{"policy":"dynamic"}`
		}},
		{"pinned CPU absent", NUMAInfoKeyPodCPUAllocs, "pod default/x", func(d map[string]string) {
			d[NUMAInfoKeyPodCPUAllocs] = `[{"namespace":"default","name":"x","cpuset":"99"}]`
		}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseNUMAInfo(numaInfoCM(t, tc.mutate))
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			for _, want := range []string{"kube-system/n1-numa-info", tc.key, tc.want} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not mention %q", msg, want)
				}
			}
		})
	}
}

func TestAnnotationParsers(t *testing.T) {
	rs, err := GetResourceStatus(map[string]string{AnnotationResourceStatus: `{"cpuset":"0-3","numaNodeResources":[{"node":0,"resources":{"cpu":"4","memory":"8Gi"}}]}`})
	if err != nil {
		t.Fatal(err)
	}
	if !rs.CPUs().Equals(cpuset.New(0, 1, 2, 3)) {
		t.Errorf("cpus = %s", rs.CPUs())
	}
	if q := rs.NUMANodeResources[0].Resources[corev1.ResourceMemory]; q.Cmp(resource.MustParse("8Gi")) != 0 {
		t.Errorf("memory = %s", q.String())
	}

	errCases := []struct {
		key, value, want string
		parse            func(map[string]string) error
	}{
		{AnnotationResourceSpec, `{"preferredCPUBindPolicy":"Whole"}`, `preferredCPUBindPolicy "Whole"`, func(a map[string]string) error { _, err := GetResourceSpec(a); return err }},
		{AnnotationResourceSpec, `{"preferredCPUBindPolicy":`, "invalid JSON", func(a map[string]string) error { _, err := GetResourceSpec(a); return err }},
		{AnnotationNUMATopologySpec, `{"numaTopologyPolicy":"Single"}`, `"Single"`, func(a map[string]string) error { _, err := GetNUMATopologySpec(a); return err }},
		{AnnotationResourceStatus, `{"cpuset":"a-b"}`, `cpuset "a-b"`, func(a map[string]string) error { _, err := GetResourceStatus(a); return err }},
		{AnnotationCustomUsageThresholds, `{"usageThresholds":{"cpu":101}}`, "usageThresholds.cpu: 101", func(a map[string]string) error { _, err := GetCustomUsageThresholds(a); return err }},
		{AnnotationReservationAffinity, `{"requiredDuringSchedulingIgnoredDuringExecution":{"reservationSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Near"}]}]}}`, "Near", func(a map[string]string) error { _, err := GetReservationAffinity(a); return err }},
		{AnnotationReservationAllocated, `{"uid":"1"}`, "name is empty", func(a map[string]string) error { _, err := GetReservationAllocated(a); return err }},
	}
	for _, tc := range errCases {
		err := tc.parse(map[string]string{tc.key: tc.value})
		if err == nil {
			t.Errorf("%s=%s accepted", tc.key, tc.value)
			continue
		}
		if !strings.Contains(err.Error(), "annotation "+tc.key) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: error %q should name the key and contain %q", tc.key, tc.value, err, tc.want)
		}
	}

	// Absent annotations are not errors.
	if s, err := GetResourceSpec(nil); err != nil || *s != (ResourceSpec{}) {
		t.Errorf("absent resource-spec: %v %v", s, err)
	}
	if a, err := GetReservationAffinity(nil); err != nil || a != nil {
		t.Errorf("absent reservation-affinity: %v %v", a, err)
	}
}

func TestQoSAndPriority(t *testing.T) {
	cpu := func(req, lim string) corev1.ResourceRequirements {
		r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
		if req != "" {
			r.Requests[corev1.ResourceCPU] = resource.MustParse(req)
			r.Requests[corev1.ResourceMemory] = resource.MustParse("1Gi")
		}
		if lim != "" {
			r.Limits[corev1.ResourceCPU] = resource.MustParse(lim)
			r.Limits[corev1.ResourceMemory] = resource.MustParse("1Gi")
		}
		return r
	}
	pod := func(label string, res corev1.ResourceRequirements) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: res}}}}
		if label != "" {
			p.Labels = map[string]string{LabelPodQoS: label}
		}
		return p
	}
	cases := []struct {
		pod     *corev1.Pod
		want    QoSClass
		wantErr bool
	}{
		{pod("", cpu("2", "2")), QoSLSR, false},
		{pod("", cpu("1", "2")), QoSLS, false},
		{pod("", cpu("", "")), QoSBE, false},
		{pod("LSE", cpu("2", "2")), QoSLSE, false},
		{pod("BE", cpu("1", "2")), QoSBE, false},
		{pod("gold", cpu("1", "2")), QoSLS, true},
	}
	for i, tc := range cases {
		got, err := GetPodQoSClass(tc.pod)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("case %d: got %q, %v; want %q, error %v", i, got, err, tc.want, tc.wantErr)
		}
	}

	for prio, want := range map[int32]PriorityClass{9000: PriorityProd, 9999: PriorityProd, 7500: PriorityMid, 5000: PriorityBatch, 3999: PriorityFree, 0: PriorityNone, 10000: PriorityNone, 6000: PriorityNone} {
		if got := PriorityClassOf(prio); got != want {
			t.Errorf("PriorityClassOf(%d) = %q, want %q", prio, got, want)
		}
	}
	if PodPriorityClass(nil) != PriorityNone {
		t.Error("nil priority must be in no band")
	}
}
