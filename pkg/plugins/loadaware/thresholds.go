package loadaware

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

// nodeThresholds are a node's own thresholds, aligned with Plugin.resources,
// and the aggregation its usage thresholds apply to (none: the args').
type nodeThresholds struct {
	usage, prod []int64
	aggType     slov1alpha1.AggregationType
	aggDuration metav1.Duration
}

func (t *nodeThresholds) aggregation() (slov1alpha1.AggregationType, metav1.Duration) {
	if t == nil {
		return "", metav1.Duration{}
	}
	return t.aggType, t.aggDuration
}

// customThresholds returns the thresholds of the node's usage-thresholds
// annotation, nil when it has none or it is malformed (the plugin args apply
// then; a malformed value is logged and reported as an event once per value).
// Parsing happens only when the annotation changes. The parse is kept with
// the node's state, which the metric and pods keep alive, not the
// annotation: it is only ever asked for on a node with a metric, and a
// state kept for it would outlive the node.
func (p *Plugin) customThresholds(ctx context.Context, node *corev1.Node) (_ *nodeThresholds, refreshed bool) {
	raw, ok := node.Annotations[extension.AnnotationCustomUsageThresholds]
	if !ok {
		return nil, false
	}
	c := p.cache
	c.mu.RLock()
	if n := c.nodes[node.Name]; n != nil && n.thresholdsRaw == raw {
		t := n.thresholdsParsed
		c.mu.RUnlock()
		return t, false
	}
	c.mu.RUnlock()

	var parsed *nodeThresholds
	custom, err := extension.GetCustomUsageThresholds(node.Annotations)
	switch {
	case err != nil:
		klog.FromContext(ctx).Error(err, "Ignoring node usage thresholds, using the plugin args", "node", klog.KObj(node))
		if p.handle != nil && p.handle.EventRecorder() != nil {
			rec := p.handle.EventRecorder()
			rec.Eventf(node, nil, corev1.EventTypeWarning, "InvalidUsageThresholds", "Scheduling", "%v; %s uses its configured thresholds for this node", err, Name)
		}
	case custom != nil:
		parsed = &nodeThresholds{usage: p.usageThresholds, prod: p.prodThresholds}
		if len(custom.UsageThresholds) > 0 {
			parsed.usage = p.align(custom.UsageThresholds)
		}
		// As in Koordinator, aggregatedUsage counts only with both its
		// thresholds and its type: then non-prod pods are judged by that
		// statistic over that window (the longest reported when the
		// duration is left out), against those thresholds.
		if a := custom.AggregatedUsage; a != nil && len(a.UsageThresholds) > 0 && a.UsageAggregationType != "" {
			parsed.usage = p.align(a.UsageThresholds)
			parsed.aggType = slov1alpha1.AggregationType(a.UsageAggregationType)
			if a.UsageAggregatedDuration != nil {
				parsed.aggDuration = *a.UsageAggregatedDuration
			}
		}
		if len(custom.ProdUsageThresholds) > 0 {
			parsed.prod = p.align(custom.ProdUsageThresholds)
		}
	}
	// Looked up again: the node's state may have gone while this parsed.
	// A new aggregation changes the node's filter usage: worked in now.
	c.mu.Lock()
	if n := c.nodes[node.Name]; n != nil {
		before := n.thresholdsParsed
		n.thresholdsRaw, n.thresholdsParsed = raw, parsed
		bt, bd := before.aggregation()
		if at, ad := parsed.aggregation(); at != bt || ad != bd {
			c.refresh(n)
			refreshed = true
		}
	}
	c.mu.Unlock()
	return parsed, refreshed
}
