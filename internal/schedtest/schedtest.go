// Package schedtest holds what the scheduler plugins' tests share.
package schedtest

import (
	"context"
	"fmt"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
)

// NewFit is the in-tree NodeResourcesFit as kube-scheduler's default profile
// runs it (LeastAllocated over cpu and memory): what our plugins' costs are
// compared with.
func NewFit(tb testing.TB) fwk.Plugin {
	tb.Helper()
	args := &schedconfig.NodeResourcesFitArgs{ScoringStrategy: &schedconfig.ScoringStrategy{
		Type:      schedconfig.LeastAllocated,
		Resources: []schedconfig.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}},
	}}
	fit, err := noderesources.NewFit(context.Background(), args, nil, feature.Features{})
	if err != nil {
		tb.Fatal(err)
	}
	return fit
}

// NodeAnnotations are what node i of a kubeadm cluster with a CSI driver and
// Calico carries: six, none of them Koord's. Real nodes have these, and a
// plugin that reads a node's annotations per pod pays for their map; nodes
// built bare hide that cost.
func NodeAnnotations(i int) map[string]string {
	return map[string]string{
		"node.alpha.kubernetes.io/ttl":                           "0",
		"volumes.kubernetes.io/controller-managed-attach-detach": "true",
		"kubeadm.alpha.kubernetes.io/cri-socket":                 "unix:///run/containerd/containerd.sock",
		"csi.volume.kubernetes.io/nodeid":                        fmt.Sprintf(`{"ebs.csi.aws.com":"i-%012d"}`, i),
		"projectcalico.org/IPv4Address":                          fmt.Sprintf("10.0.%d.%d/16", i/256, i%256),
		"projectcalico.org/IPv4VXLANTunnelAddr":                  fmt.Sprintf("192.168.%d.%d", i/256, i%256),
	}
}
