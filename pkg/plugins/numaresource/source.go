package numaresource

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/extension"
)

// watchTopology keeps State's topologies current from the configured source
// and returns when its handler has seen everything that exists.
func (p *Plugin) watchTopology(ctx context.Context, h fwk.Handle) (cache.InformerSynced, error) {
	switch p.args.TopologySource {
	case config.TopologySourceConfigMap:
		return p.watchConfigMaps(ctx, h)
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
	info, err := extension.ParseNUMAInfo(cm)
	if err != nil {
		// Binding pods stay off the node, and Filter names this error.
		logger.Error(err, "Malformed NUMA info; CPU-binding pods will not be placed on the node", "node", node)
	}
	p.state.SetTopology(node, info, err)
	p.retryWaiting(logger)
}
