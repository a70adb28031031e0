package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/manifests"
)

// TestSampleWorkload applies the shipped PriorityClasses and sample workload
// (what `make demo` shows) and checks each pod ends where the sample says.
func TestSampleWorkload(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	node, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "node-1", CPU: "16", Memory: "64Gi"})
	if err != nil {
		t.Fatal(err)
	}
	// 1 socket × 2 NUMA nodes × 4 cores × 2 threads, as koordlet would publish it.
	if err := cp.PublishNUMAInfo(ctx, "node-1", topologytest.Linux(1, 2, 4, 2, 32<<30)); err != nil {
		t.Fatal(err)
	}
	// Batch capacity as koord-manager would publish it.
	node.Status.Allocatable[extension.BatchCPU] = *mustQuantity(t, "8000")
	node.Status.Allocatable[extension.BatchMemory] = *mustQuantity(t, "16Gi")
	node.Status.Capacity = node.Status.Allocatable
	if _, err := cp.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cp.Apply(ctx, manifests.PriorityClasses); err != nil {
		t.Fatal(err)
	}
	if err := cp.Apply(ctx, manifests.SampleWorkload); err != nil {
		t.Fatal(err)
	}
	if err := cp.WaitForDecisions(ctx, "koord-scheduler", time.Minute); err != nil {
		t.Fatal(err)
	}

	pods, err := cp.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantQoS := map[string]extension.QoSClass{"web-lsr": extension.QoSLSR, "db-lse": extension.QoSLSE, "api-ls": extension.QoSLS, "cache-mid": extension.QoSLS, "spark-be": extension.QoSBE, "huge-ls": extension.QoSLS}
	wantBand := map[string]extension.PriorityClass{"web-lsr": extension.PriorityProd, "db-lse": extension.PriorityProd, "api-ls": extension.PriorityProd, "cache-mid": extension.PriorityMid, "spark-be": extension.PriorityBatch}
	for i := range pods.Items {
		p := &pods.Items[i]
		switch p.Name {
		case "huge-ls":
			if p.Spec.NodeName != "" || !strings.Contains(controlplane.PodUnschedulableMessage(p), "Insufficient cpu") {
				t.Errorf("huge-ls: node %q, reason %q", p.Spec.NodeName, controlplane.PodUnschedulableMessage(p))
			}
		case "other-scheduler":
			if p.Spec.NodeName != "" {
				t.Errorf("koord-scheduler bound the default scheduler's pod")
			}
			continue
		default:
			if p.Spec.NodeName != "node-1" {
				t.Errorf("%s not bound: %s", p.Name, controlplane.PodUnschedulableMessage(p))
			}
		}
		// The two latency-critical pods get their own CPUs; the rest share.
		st, err := extension.GetResourceStatus(p.Annotations)
		if err != nil {
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		switch want := map[string]string{"web-lsr": "2 CPUs", "db-lse": "4 CPUs"}[p.Name]; {
		case want != "" && fmt.Sprintf("%d CPUs", st.CPUs().Size()) != want:
			t.Errorf("%s: cpuset %q, want %s", p.Name, st.CPUSet, want)
		case want == "" && st.CPUSet != "":
			t.Errorf("%s: bound CPUs %q; only LSE/LSR pods should", p.Name, st.CPUSet)
		}
		if p.Name == "db-lse" && len(st.NUMANodeResources) != 1 {
			t.Errorf("db-lse (SingleNUMANode) spans NUMA nodes: %+v", st.NUMANodeResources)
		}
		if q, err := extension.GetPodQoSClass(p); err != nil || q != wantQoS[p.Name] {
			t.Errorf("%s: QoS %q (%v), want %q", p.Name, q, err, wantQoS[p.Name])
		}
		if want, ok := wantBand[p.Name]; ok && extension.PodPriorityClass(p.Spec.Priority) != want {
			t.Errorf("%s: priority band %q, want %q", p.Name, extension.PodPriorityClass(p.Spec.Priority), want)
		}
	}
}
