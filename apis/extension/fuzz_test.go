package extension

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Each fuzz target checks two things a user would notice: a parser of outside
// input never panics, and whatever it accepts survives being written back and
// read again unchanged (so the scheduler and koordlet agree on the value).

func roundTrip[T any](t *testing.T, key string, parse func(map[string]string) (T, error), got T) {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("accepted value does not encode: %v", err)
	}
	again, err := parse(map[string]string{key: string(b)})
	if err != nil {
		t.Fatalf("accepted value %s is rejected when read back: %v", b, err)
	}
	b2, _ := json.Marshal(again)
	if string(b) != string(b2) {
		t.Fatalf("round trip changed the value: %s -> %s", b, b2)
	}
}

func fuzzAnnotation[T any](f *testing.F, key string, parse func(map[string]string) (T, error), seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		got, err := parse(map[string]string{key: value})
		if err != nil {
			var ke *KeyError
			if !asKeyError(err, &ke) || ke.Key != key {
				t.Fatalf("error %q does not name key %s", err, key)
			}
			return
		}
		roundTrip(t, key, parse, got)
	})
}

func asKeyError(err error, out **KeyError) bool {
	ke, ok := err.(*KeyError)
	*out = ke
	return ok
}

func FuzzResourceSpec(f *testing.F) {
	fuzzAnnotation(f, AnnotationResourceSpec, GetResourceSpec,
		`{"preferredCPUBindPolicy":"FullPCPUs"}`,
		`{"requiredCPUBindPolicy":"SpreadByPCPUs","preferredCPUExclusivePolicy":"PCPULevel"}`,
		`{"preferredCPUBindPolicy":"Bogus"}`, `{`, `null`, `[]`)
}

func FuzzNUMATopologySpec(f *testing.F) {
	fuzzAnnotation(f, AnnotationNUMATopologySpec, GetNUMATopologySpec,
		`{"numaTopologyPolicy":"SingleNUMANode"}`, `{"numaTopologyPolicy":"None"}`, `{"numaTopologyPolicy":1}`)
}

func FuzzResourceStatus(f *testing.F) {
	fuzzAnnotation(f, AnnotationResourceStatus, GetResourceStatus,
		`{"cpuset":"0-3","numaNodeResources":[{"node":0,"resources":{"cpu":"4","memory":"8Gi"}}]}`,
		`{"cpuset":"0-3,8"}`, `{"cpuset":"3-1"}`, `{"cpuset":"0-3","numaNodeResources":[{"node":-1}]}`,
		`{"numaNodeResources":[{"node":0,"resources":{"cpu":"-1"}}]}`, `{"cpuset":"0-50000000"}`,
		// Quantity bombs (a second of ParseQuantity each, unbounded).
		`{"numaNodeResources":[{"node":0,"resources":{"cpu":"1e-9999999","memory":"1e-99"}}]}`, `{"numaNodeResources":[{"node":0,"resources":{"memory":1e-300}}]}`)
}

func FuzzCustomUsageThresholds(f *testing.F) {
	fuzzAnnotation(f, AnnotationCustomUsageThresholds, GetCustomUsageThresholds,
		`{"usageThresholds":{"cpu":65,"memory":95},"prodUsageThresholds":{"cpu":50}}`,
		`{"aggregatedUsage":{"usageThresholds":{"cpu":70},"usageAggregationType":"p95","usageAggregatedDuration":"5m"}}`,
		`{"usageThresholds":{"cpu":165}}`, `{"usageThresholds":{"cpu":"x"}}`)
}

func FuzzCustomEstimatedScalingFactors(f *testing.F) {
	fuzzAnnotation(f, AnnotationCustomEstimatedScalingFactors, GetCustomEstimatedScalingFactors,
		`{"cpu":60,"memory":80}`, `{"cpu":-1}`, `{"cpu":1001}`, `{"cpu":"x"}`, `[]`)
}

func FuzzNodeRawAllocatable(f *testing.F) {
	fuzzAnnotation(f, AnnotationNodeRawAllocatable, GetNodeRawAllocatable,
		`{"cpu":"32","memory":"64Gi"}`, `{"cpu":"-1"}`, `{"cpu":"x"}`, `[]`, `{"cpu":"1e-9999999"}`, `{"memory":"`+strings.Repeat("9", 40)+`"}`)
}

func FuzzReservationAffinity(f *testing.F) {
	fuzzAnnotation(f, AnnotationReservationAffinity, GetReservationAffinity,
		`{"name":"r1"}`, `{"reservationSelector":{"app":"web"}}`,
		`{"requiredDuringSchedulingIgnoredDuringExecution":{"reservationSelectorTerms":[{"matchExpressions":[{"key":"app","operator":"In","values":["web"]}]}]}}`,
		`{"requiredDuringSchedulingIgnoredDuringExecution":{"reservationSelectorTerms":[{"matchExpressions":[{"key":"app","operator":"Bogus"}]}]}}`,
		`{"tolerations":[{"key":"k","operator":"Exists"}]}`, `{"name":"Not_A_Name"}`)
}

func FuzzReservationAllocated(f *testing.F) {
	fuzzAnnotation(f, AnnotationReservationAllocated, GetReservationAllocated,
		`{"name":"r1","uid":"7f1c"}`, `{"uid":"x"}`, `"r1"`)
}

func FuzzQoSClass(f *testing.F) {
	for _, s := range []string{"LSE", "LSR", "LS", "BE", "SYSTEM", "ls", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelPodQoS: v}}}
		q, err := GetPodQoSClass(pod)
		if err != nil {
			var ke *KeyError
			if !asKeyError(err, &ke) || ke.Key != LabelPodQoS {
				t.Fatalf("error %q does not name the label", err)
			}
			if q != QoSBE {
				t.Fatalf("a pod without requests must fall back to BE, got %q", q)
			}
			return
		}
		if string(q) != v {
			t.Fatalf("accepted %q but returned %q", v, q)
		}
	})
}

func FuzzNUMAInfo(f *testing.F) {
	valid, err := twoSocketInfo().ConfigMapData()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid[NUMAInfoKeyCPUTopology], valid[NUMAInfoKeyNUMANodes], valid[NUMAInfoKeyCPUBasicInfo],
		valid[NUMAInfoKeyCPUManagerPolicy], valid[NUMAInfoKeyPodCPUAllocs], valid[NUMAInfoKeyCPUSharedPools])
	f.Add(`{"detail":[{"id":0,"core":0,"socket":0,"node":0}]}`, `[{"id":0,"cpus":"0","memoryBytes":1024}]`, `{}`,
		`{"policy":"static","reservedCPUs":"1"}`, `[]`, `[]`)
	f.Add(`{"detail":[]}`, `[]`, ``, `{"policy":"dynamic"}`, `[{"cpuset":"0-"}]`, `null`)
	// Once took the parser tens of seconds and gigabytes: huge CPU ranges.
	f.Add(`{"detail":[{"id":0}]}`, `[{"id":0,"cpus":"0-30000000"}]`, `{}`, `{"policy":"static","reservedCPUs":"0-99999999"}`, `[]`, `[]`)
	// Lists longer than the node's CPUs, entries that share CPUs, CPU-less
	// NUMA nodes, ids beyond any machine (35 s a parse at 16,000 CPUs).
	one := `{"detail":[{"id":0,"core":0,"socket":0,"node":0},{"id":1,"core":0,"socket":0,"node":0}]}`
	f.Add(one, `[{"id":0,"cpus":"0-1"},{"id":1,"cpus":""},{"id":2,"cpus":""}]`, `{}`, `{}`,
		`[{"uid":"a","cpuset":"0-1"},{"uid":"b","cpuset":"0-1"},{"uid":"c","cpuset":"1"}]`, `[{"cpuset":"0-1"},{"cpuset":"0-1"},{"cpuset":"0"}]`)
	f.Add(`{"detail":[{"id":99999,"core":0,"socket":0,"node":0}]}`, `[{"id":0,"cpus":"99999"}]`, `{}`, `{}`, `[{"uid":"a","cpuset":"0"},{"uid":"a","cpuset":"1"}]`, `[]`)
	f.Fuzz(func(t *testing.T, topo, nodes, basic, policy, allocs, pools string) {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: NUMAInfoNamespace, Name: NUMAInfoConfigMapName("n1")},
			Data: map[string]string{
				NUMAInfoKeyCPUTopology: topo, NUMAInfoKeyNUMANodes: nodes, NUMAInfoKeyCPUBasicInfo: basic,
				NUMAInfoKeyCPUManagerPolicy: policy, NUMAInfoKeyPodCPUAllocs: allocs, NUMAInfoKeyCPUSharedPools: pools,
			},
		}
		info, err := ParseNUMAInfo(cm)
		if err != nil {
			var ke *KeyError
			if !asKeyError(err, &ke) {
				t.Fatalf("error %q does not name a key", err)
			}
			if _, ok := cm.Data[ke.Key]; !ok {
				t.Fatalf("error %q names key %q, which the ConfigMap does not have", err, ke.Key)
			}
			return
		}
		data, err := info.ConfigMapData()
		if err != nil {
			t.Fatalf("accepted info does not encode: %v", err)
		}
		again, err := ParseNUMAInfo(&corev1.ConfigMap{ObjectMeta: cm.ObjectMeta, Data: data})
		if err != nil {
			t.Fatalf("accepted info is rejected when read back: %v", err)
		}
		if !reflect.DeepEqual(normalize(info), normalize(again)) {
			t.Fatalf("round trip changed the info:\n%+v\n%+v", info, again)
		}
	})
}

// normalize treats nil and empty lists alike: ConfigMapData writes [] for both.
func normalize(n *NUMAInfo) NUMAInfo {
	c := *n
	c.NUMANodes = nonNil(c.NUMANodes)
	c.PodCPUAllocs = nonNil(c.PodCPUAllocs)
	c.CPUSharedPools = nonNil(c.CPUSharedPools)
	return c
}

func FuzzPodCPUBurst(f *testing.F) {
	fuzzAnnotation(f, AnnotationPodCPUBurst, GetPodCPUBurst,
		`{"policy":"auto","cpuBurstPercent":200}`, `{"policy":"cfsQuotaBurstOnly","cfsQuotaBurstPercent":300,"cfsQuotaBurstPeriodSeconds":-1}`,
		`{"policy":"always"}`, `{"cfsQuotaBurstPercent":50}`, `{`, `null`, `[]`)
}

func FuzzGetEvictionCost(f *testing.F) {
	for _, s := range []string{"0", "-5", "2147483647", "2147483648", " 7 ", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		c, err := GetEvictionCost(map[string]string{AnnotationEvictionCost: v})
		if err != nil && !strings.Contains(err.Error(), AnnotationEvictionCost) {
			t.Fatalf("error does not name the key: %v", err)
		}
		if err == nil && NeverEvict(map[string]string{AnnotationEvictionCost: v}) != (c == math.MaxInt32) {
			t.Fatal("NeverEvict disagrees with the cost")
		}
	})
}
