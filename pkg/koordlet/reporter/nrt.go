package reporter

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	nrtclientset "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/generated/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/extension"
)

// PublishNodeResourceTopology writes the same information as the numa-info
// ConfigMap as a topology.node.k8s.io/v1alpha2 NodeResourceTopology named
// after the node, the way Koordinator's koordlet does: the CPU details in
// annotations, one zone of type Node per NUMA node with its memory. Written
// only when it differs.
func PublishNodeResourceTopology(ctx context.Context, client nrtclientset.Interface, node *corev1.Node, info *extension.NUMAInfo) (Result, error) {
	data, err := info.ConfigMapData()
	if err != nil {
		return "", err
	}
	annotations := map[string]string{}
	for key, annotation := range extension.NUMAInfoAnnotations {
		annotations[annotation] = data[key]
	}
	var zones nrtv1alpha2.ZoneList
	for _, n := range info.NUMANodes {
		mem := *resource.NewQuantity(n.MemoryBytes, resource.BinarySI)
		zones = append(zones, nrtv1alpha2.Zone{Name: "node-" + strconv.Itoa(int(n.ID)), Type: "Node",
			Resources: nrtv1alpha2.ResourceInfoList{{Name: string(corev1.ResourceMemory), Capacity: mem, Allocatable: mem, Available: mem}}})
	}
	nrts := client.TopologyV1alpha2().NodeResourceTopologies()
	have, err := nrts.Get(ctx, node.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = nrts.Create(ctx, &nrtv1alpha2.NodeResourceTopology{
			ObjectMeta: metav1.ObjectMeta{Name: node.Name, Annotations: annotations,
				Labels:          map[string]string{extension.LabelManagedBy: extension.ManagedByKoordlet},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, BlockOwnerDeletion: ptr.To(false)}}},
			Zones: zones,
		}, metav1.CreateOptions{})
		if err != nil {
			return "", fmt.Errorf("creating noderesourcetopology %s: %w", node.Name, err)
		}
		return Created, nil
	}
	if err != nil {
		return "", err
	}
	if labelsInclude(have.Annotations, annotations) && equality.Semantic.DeepEqual(have.Zones, zones) {
		return Unchanged, nil
	}
	if have.Annotations == nil {
		have.Annotations = map[string]string{}
	}
	maps.Copy(have.Annotations, annotations)
	have.Zones = zones
	if _, err := nrts.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("updating noderesourcetopology %s: %w", node.Name, err)
	}
	return Updated, nil
}
