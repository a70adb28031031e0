// Package schedtest holds what the scheduler plugins' tests share.
package schedtest

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
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

// FilterPasses benchmarks one pod's PreFilter and Filter over every node,
// plugin by plugin, with warm caches and with cold ones, as sub-benchmarks
// named <prefix>caches=warm|cold/<plugin>. Cold writes 64 MiB of other
// memory before each pass (not timed), as the API server sharing the caches
// leaves them in the whole-scheduler benchmark, where each node's look-ups
// are cache misses: a plugin's cost per node there is its misses, which a
// warm pass hides. Every node must pass.
func FilterPasses(b *testing.B, prefix string, plugins []fwk.Plugin, pod *corev1.Pod, nodes []fwk.NodeInfo) {
	ctx := context.Background()
	for _, pl := range plugins {
		for _, caches := range []string{"warm", "cold"} {
			b.Run(fmt.Sprintf("%scaches=%s/%s", prefix, caches, pl.Name()), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if caches == "cold" {
						b.StopTimer()
						evictCaches()
						b.StartTimer()
					}
					state := framework.NewCycleState()
					if _, st := pl.(fwk.PreFilterPlugin).PreFilter(ctx, state, pod, nodes); !st.IsSuccess() {
						b.Fatal(st.AsError())
					}
					for _, ni := range nodes {
						if st := pl.(fwk.FilterPlugin).Filter(ctx, state, pod, ni); !st.IsSuccess() {
							b.Fatal(st.AsError())
						}
					}
				}
			})
		}
	}
}

// other is what evictCaches writes, allocated once.
var other []byte

func evictCaches() {
	if other == nil {
		other = make([]byte, 64<<20)
	}
	for i := 0; i < len(other); i += 64 {
		other[i]++
	}
}
