package numaresource

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	nrtclientset "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/generated/clientset/versioned"
	nrtinformers "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/generated/informers/externalversions"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/client/koordclient"
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
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onConfigMap(logger, obj, false) },
		UpdateFunc: func(_, obj any) { p.onConfigMap(logger, obj, false) },
		DeleteFunc: func(obj any) { p.onConfigMap(logger, obj, true) },
	})
	if err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	return reg.HasSynced, nil
}

func (p *Plugin) onConfigMap(logger klog.Logger, obj any, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || !strings.HasSuffix(cm.Name, extension.NUMAInfoSuffix) {
		return
	}
	node := strings.TrimSuffix(cm.Name, extension.NUMAInfoSuffix)
	if deleted {
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
// the CPU topology in Koordinator's annotations, NUMA nodes as zones.
func (p *Plugin) watchNodeResourceTopologies(ctx context.Context, h fwk.Handle) (cache.InformerSynced, error) {
	client, err := nrtclientset.NewForConfig(koordclient.JSON(h.KubeConfig()))
	if err != nil {
		return nil, err
	}
	factory := nrtinformers.NewSharedInformerFactory(client, 0)
	inf := factory.Topology().V1alpha2().NodeResourceTopologies().Informer()
	logger := klog.FromContext(ctx)
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onNodeResourceTopology(logger, obj, false) },
		UpdateFunc: func(_, obj any) { p.onNodeResourceTopology(logger, obj, false) },
		DeleteFunc: func(obj any) { p.onNodeResourceTopology(logger, obj, true) },
	})
	if err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	return reg.HasSynced, nil
}

func (p *Plugin) onNodeResourceTopology(logger klog.Logger, obj any, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	nrt, ok := obj.(*nrtv1alpha2.NodeResourceTopology)
	if !ok {
		return
	}
	if deleted {
		p.state.RemoveTopology(nrt.Name)
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
