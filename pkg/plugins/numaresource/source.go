package numaresource

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/client/koordclient"
	"github.com/koord-project/koord/pkg/client/lenient"
)

// watchTopology keeps State's topologies current from the configured source
// and returns when its handler has seen everything that exists.
func (p *Plugin) watchTopology(ctx context.Context, h fwk.Handle) (cache.InformerSynced, error) {
	switch p.args.TopologySource {
	case config.TopologySourceConfigMap:
		return p.watchConfigMaps(ctx, h)
	case config.TopologySourceNodeResourceTopology:
		return p.watchNodeResourceTopologies(ctx, h)
	}
	return nil, fmt.Errorf("topologySource %q is not supported", p.args.TopologySource)
}

// watchConfigMaps watches only kube-system, where koordlet publishes.
func (p *Plugin) watchConfigMaps(ctx context.Context, h fwk.Handle) (cache.InformerSynced, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(h.ClientSet(), 0, informers.WithNamespace(extension.NUMAInfoNamespace))
	inf := factory.Core().V1().ConfigMaps().Informer()
	logger := klog.FromContext(ctx)
	q := newTopologyQueue(inf.GetStore(), func(key string, obj any) {
		_, name, _ := cache.SplitMetaNamespaceKey(key)
		cm, _ := obj.(*corev1.ConfigMap)
		p.onConfigMap(logger, strings.TrimSuffix(name, extension.NUMAInfoSuffix), cm)
	})
	synced, err := q.watch(ctx, inf, func(obj any) bool {
		cm, ok := obj.(*corev1.ConfigMap)
		return ok && strings.HasSuffix(cm.Name, extension.NUMAInfoSuffix)
	})
	if err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	return synced, nil
}

// onConfigMap records node's topology from its numa-info ConfigMap (nil:
// deleted).
func (p *Plugin) onConfigMap(logger klog.Logger, node string, cm *corev1.ConfigMap) {
	if cm == nil {
		p.state.RemoveTopology(node)
		return
	}
	info, err := (*extension.NUMAInfo)(nil), extension.CheckNUMAInfoOrigin(cm, node)
	if err == nil {
		info, err = extension.ParseNUMAInfo(cm)
	}
	if err != nil {
		// Binding pods stay off the node, and Filter names this error.
		logger.Error(err, "Malformed NUMA info; CPU-binding pods will not be placed on the node", "node", node)
	}
	p.state.SetTopology(node, info, err)
	p.retryRejected()
}

// watchNodeResourceTopologies reads topology.node.k8s.io/v1alpha2 objects
// (one per node, named after it) written by Koordinator-compatible agents:
// the CPU topology in Koordinator's annotations, NUMA nodes as zones. They
// decode one at a time (package lenient), so that one a node wrote wrong,
// or with a quantity out of bounds, is skipped and logged.
func (p *Plugin) watchNodeResourceTopologies(ctx context.Context, h fwk.Handle) (cache.InformerSynced, error) {
	dyn, err := dynamic.NewForConfig(koordclient.JSON(h.KubeConfig()))
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	inf := lenient.Informer(dyn, lenient.NodeResourceTopologies, nil, func(u *unstructured.Unstructured, err error) {
		logger.Error(err, "Ignoring a NodeResourceTopology that does not decode; CPU-binding pods keep its last good version", "node", u.GetName())
	})
	q := newTopologyQueue(inf.GetStore(), func(key string, obj any) {
		nrt, _ := obj.(*nrtv1alpha2.NodeResourceTopology)
		p.onNodeResourceTopology(logger, key, nrt)
	})
	synced, err := q.watch(ctx, inf, func(obj any) bool {
		_, ok := obj.(*nrtv1alpha2.NodeResourceTopology)
		return ok
	})
	if err != nil {
		return nil, err
	}
	go inf.Run(ctx.Done())
	return synced, nil
}

// onNodeResourceTopology records node's topology from its NRT object (nil:
// deleted).
func (p *Plugin) onNodeResourceTopology(logger klog.Logger, node string, nrt *nrtv1alpha2.NodeResourceTopology) {
	if nrt == nil {
		p.state.RemoveTopology(node)
		return
	}
	info, err := ParseNodeResourceTopology(nrt)
	if err != nil {
		logger.Error(err, "Malformed NodeResourceTopology; CPU-binding pods will not be placed on the node", "node", nrt.Name)
	}
	p.state.SetTopology(nrt.Name, info, err)
	p.retryRejected()
}

// ParseNodeResourceTopology reads a node's NUMA info from its NRT object: NUMA
// nodes are the zones of type Node named node-<id>, with the memory pods may
// use (allocatable, else capacity).
func ParseNodeResourceTopology(nrt *nrtv1alpha2.NodeResourceTopology) (*extension.NUMAInfo, error) {
	kind := "noderesourcetopology " + nrt.Name
	memory := map[int32]int64{}
	for _, z := range nrt.Zones {
		if z.Type != "Node" {
			continue
		}
		id, err := strconv.ParseInt(strings.TrimPrefix(z.Name, "node-"), 10, 32)
		if err != nil || !strings.HasPrefix(z.Name, "node-") || id < 0 {
			return nil, fmt.Errorf("%s zone %q: a zone of type Node must be named node-<NUMA id>", kind, z.Name)
		}
		for _, r := range z.Resources {
			if r.Name != string(corev1.ResourceMemory) {
				continue
			}
			q := r.Allocatable
			if q.IsZero() {
				q = r.Capacity
			}
			memory[int32(id)] = q.Value()
		}
	}
	return extension.ParseNUMAInfoAnnotations(kind, nrt.Annotations, memory)
}
