package numaresource

import (
	"strconv"
	"strings"
	"testing"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/topologytest"
)

// nrtOf is the NodeResourceTopology a Koordinator-compatible agent writes for info.
func nrtOf(t testing.TB, name string, info *extension.NUMAInfo) *nrtv1alpha2.NodeResourceTopology {
	data, err := info.ConfigMapData()
	if err != nil {
		t.Fatal(err)
	}
	nrt := &nrtv1alpha2.NodeResourceTopology{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
	for key, annotation := range extension.NUMAInfoAnnotations {
		nrt.Annotations[annotation] = data[key]
	}
	for _, n := range info.NUMANodes {
		nrt.Zones = append(nrt.Zones, nrtv1alpha2.Zone{Name: "node-" + strconv.Itoa(int(n.ID)), Type: "Node",
			Resources: nrtv1alpha2.ResourceInfoList{{Name: "memory", Capacity: *resource.NewQuantity(n.MemoryBytes, resource.BinarySI)}}})
	}
	return nrt
}

func TestParseNodeResourceTopology(t *testing.T) {
	info := topologytest.Linux(2, 1, 4, 2, 16*gi)
	got, err := ParseNodeResourceTopology(nrtOf(t, "n1", info))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.NUMANodes) != 2 || got.NUMANodes[1].CPUs != info.NUMANodes[1].CPUs || got.NUMANodes[1].MemoryBytes != 16*gi {
		t.Errorf("NUMA nodes %+v, want %+v", got.NUMANodes, info.NUMANodes)
	}
	for _, tc := range []struct {
		mutate func(*nrtv1alpha2.NodeResourceTopology)
		want   string
	}{
		{func(n *nrtv1alpha2.NodeResourceTopology) { n.Zones[0].Name = "numa0" }, `noderesourcetopology n1 zone "numa0": a zone of type Node must be named node-<NUMA id>`},
		{func(n *nrtv1alpha2.NodeResourceTopology) { n.Zones = n.Zones[1:] }, "noderesourcetopology n1 annotation node.koordinator.sh/cpu-topology: NUMA node 0 has no zone giving its memory"},
		{func(n *nrtv1alpha2.NodeResourceTopology) {
			n.Annotations["kubelet.koordinator.sh/cpu-manager-policy"] = `{"policy":"static","reservedCPUs":"99"}`
		}, "annotation kubelet.koordinator.sh/cpu-manager-policy"},
		{func(n *nrtv1alpha2.NodeResourceTopology) { delete(n.Annotations, "node.koordinator.sh/cpu-topology") }, "annotation node.koordinator.sh/cpu-topology: missing"},
	} {
		nrt := nrtOf(t, "n1", info)
		tc.mutate(nrt)
		if _, err := ParseNodeResourceTopology(nrt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
	}
}

// FuzzNodeResourceTopology: any annotations and zone names give NUMA info or
// an error naming the object, never a panic.
func FuzzNodeResourceTopology(f *testing.F) {
	info := topologytest.Linux(1, 2, 2, 2, gi)
	data, _ := info.ConfigMapData()
	f.Add(data[extension.NUMAInfoKeyCPUTopology], data[extension.NUMAInfoKeyCPUManagerPolicy], data[extension.NUMAInfoKeyPodCPUAllocs], "node-0", "node-1")
	f.Add(`{"detail":[{"id":0}]}`, `{"policy":"static","reservedCPUs":"0-"}`, `[]`, "node-x", "")
	// More pins than CPUs, pins sharing CPUs, one pod twice.
	f.Add(data[extension.NUMAInfoKeyCPUTopology], `{}`, `[{"uid":"a","cpuset":"0-7"},{"uid":"b","cpuset":"0-7"},{"uid":"a","cpuset":"1"}]`, "node-0", "node-1")
	f.Fuzz(func(t *testing.T, topo, policy, allocs, zone0, zone1 string) {
		nrt := &nrtv1alpha2.NodeResourceTopology{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
			"node.koordinator.sh/cpu-topology": topo, "kubelet.koordinator.sh/cpu-manager-policy": policy, "node.koordinator.sh/pod-cpu-allocs": allocs}}}
		for _, z := range []string{zone0, zone1} {
			nrt.Zones = append(nrt.Zones, nrtv1alpha2.Zone{Name: z, Type: "Node", Resources: nrtv1alpha2.ResourceInfoList{{Name: "memory", Capacity: resource.MustParse("1Gi")}}})
		}
		got, err := ParseNodeResourceTopology(nrt)
		if err != nil {
			if !strings.Contains(err.Error(), "noderesourcetopology n ") {
				t.Fatalf("error does not name the object: %v", err)
			}
			return
		}
		if _, err := NewTopology(got.CPUTopology); err != nil {
			t.Fatalf("accepted a topology the plugin cannot index: %v", err)
		}
	})
}
