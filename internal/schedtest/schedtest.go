// Package schedtest holds what the scheduler plugins' tests share.
package schedtest

import (
	"context"
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
