package compat

import (
	"context"
	"testing"
	"time"

	nrtv1alpha1 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha1"
	nrtclientset "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/generated/clientset/versioned"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/manifests"
	"github.com/koord-project/koord/pkg/client/koordclient"
	"github.com/koord-project/koord/pkg/plugins/numaresource"
)

// Koordinator's koordlet writes NodeResourceTopology in v1alpha1; Koord's
// shipped CRD serves it beside v1alpha2, and koord-scheduler, which reads
// v1alpha2 (topologySource: NodeResourceTopology), sees the same object.
func TestNodeResourceTopologyV1alpha1(t *testing.T) {
	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	if err := cp.InstallCRDs(ctx, manifests.ThirdPartyCRDs); err != nil {
		t.Fatal(err)
	}
	client, err := nrtclientset.NewForConfig(koordclient.JSON(cp.Config))
	if err != nil {
		t.Fatal(err)
	}
	// As Koordinator's koordlet writes it: its CPU topology in annotations,
	// NUMA nodes as zones of type Node.
	written := &nrtv1alpha1.NodeResourceTopology{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Annotations: map[string]string{
			"node.koordinator.sh/cpu-topology": `{"detail":[{"id":0,"core":0,"socket":0,"node":0},{"id":1,"core":1,"socket":0,"node":0},` +
				`{"id":2,"core":0,"socket":0,"node":0},{"id":3,"core":1,"socket":0,"node":0},` +
				`{"id":4,"core":2,"socket":0,"node":1},{"id":5,"core":3,"socket":0,"node":1},` +
				`{"id":6,"core":2,"socket":0,"node":1},{"id":7,"core":3,"socket":0,"node":1}]}`,
		}},
		TopologyPolicies: []string{"None"},
		Zones: nrtv1alpha1.ZoneList{
			{Name: "node-0", Type: "Node", Resources: nrtv1alpha1.ResourceInfoList{{Name: "memory", Capacity: resource.MustParse("8Gi"), Allocatable: resource.MustParse("7Gi")}}},
			{Name: "node-1", Type: "Node", Resources: nrtv1alpha1.ResourceInfoList{{Name: "memory", Capacity: resource.MustParse("8Gi"), Allocatable: resource.MustParse("8Gi")}}},
		},
	}
	if _, err := client.TopologyV1alpha1().NodeResourceTopologies().Create(ctx, written, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}); err != nil {
		t.Fatal(err)
	}
	read, err := client.TopologyV1alpha2().NodeResourceTopologies().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the v1alpha1 object as v1alpha2: %v", err)
	}
	info, err := numaresource.ParseNodeResourceTopology(read)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.CPUTopology.Detail) != 8 || len(info.NUMANodes) != 2 || info.NUMANodes[0].MemoryBytes != 7<<30 {
		t.Errorf("parsed %d CPUs, NUMA nodes %+v", len(info.CPUTopology.Detail), info.NUMANodes)
	}
}
