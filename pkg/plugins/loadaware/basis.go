package loadaware

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/extension"
)

// basis is what a node's usage is a share of: its allocatable, or, where
// its node.koordinator.sh/raw-allocatable annotation gives one, its
// allocatable before Koordinator's resource amplification (usage is
// physical, amplified allocatable is not).
type basis struct {
	alloc fwk.Resource
	// raw is aligned with Plugin.resources; 0: none for that resource.
	raw []int64
}

func (b basis) of(i int, name corev1.ResourceName) int64 {
	if b.raw != nil && b.raw[i] > 0 {
		return b.raw[i]
	}
	return allocatable(b.alloc, name)
}

// rawEntry is a node's raw-allocatable annotation, parsed once per value.
type rawEntry struct {
	value string
	raw   []int64
}

// basis is the node's basis. The annotation is parsed only when its value
// changes; a malformed one is logged and ignored (allocatable applies).
func (p *Plugin) basis(ctx context.Context, node *corev1.Node, alloc fwk.Resource) basis {
	v, ok := node.Annotations[extension.AnnotationNodeRawAllocatable]
	if !ok {
		return basis{alloc: alloc}
	}
	if e, ok := p.rawAllocatable.Load(node.Name); ok && e.(*rawEntry).value == v {
		return basis{alloc: alloc, raw: e.(*rawEntry).raw}
	}
	list, err := extension.GetNodeRawAllocatable(node.Annotations)
	var raw []int64
	if err != nil {
		klog.FromContext(ctx).Error(err, "Ignoring the node's raw allocatable", "node", klog.KObj(node))
	} else {
		raw = make([]int64, len(p.resources))
		for i, name := range p.resources {
			if q, ok := list[name]; ok {
				raw[i] = amount(name, q)
			}
		}
	}
	p.rawAllocatable.Store(node.Name, &rawEntry{value: v, raw: raw})
	return basis{alloc: alloc, raw: raw}
}
