package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/extension"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
)

// gangScene: a PodGroup of 5 workers of 4 CPUs on a pool with room for 4.
// None binds and, after the gang's timeout, none holds anything; a node
// added to the pool lets all 5 bind together.
func gangScene(ctx context.Context, cp *controlplane.ControlPlane) error {
	fmt.Println("\nGang scheduling: PodGroup train (minMember 5, timeout 3s), 5 workers of 4 CPUs, on pool train (2 nodes of 8 CPUs: room for 4)")
	pool := map[string]string{"pool": "train"}
	addNode := func(name string) error { return addPoolNode(ctx, cp, name, "8", pool) }
	for _, n := range []string{"train-1", "train-2"} {
		if err := addNode(n); err != nil {
			return err
		}
	}
	if _, err := cp.Koord.SchedulingSigsV1alpha1().PodGroups("default").Create(ctx, &schedulingsigsv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train"},
		Spec: schedulingsigsv1alpha1.PodGroupSpec{MinMember: 5, ScheduleTimeoutSeconds: ptr.To[int32](3)}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for i := 0; i < 5; i++ {
		pod, err := controlplane.MakePod(controlplane.PodSpec{Name: fmt.Sprintf("worker-%d", i), SchedulerName: "koord-scheduler", CPU: "4", Memory: "1Gi",
			Labels: map[string]string{extension.LabelPodGroup: "train"}})
		if err != nil {
			return err
		}
		pod.Spec.NodeSelector = pool
		if _, err := cp.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	bound := func() (int, error) {
		n := 0
		for i := 0; i < 5; i++ {
			p, err := cp.Client.CoreV1().Pods("default").Get(ctx, fmt.Sprintf("worker-%d", i), metav1.GetOptions{})
			if err != nil {
				return 0, err
			}
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return n, nil
	}
	// Past the gang's timeout: nothing bound, and the reason says why.
	var reason string
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := cp.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedScheduling" && strings.HasPrefix(e.InvolvedObject.Name, "worker-") && strings.Contains(e.Message, "(Strict)") {
				reason = e.Message
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return fmt.Errorf("no gang event for the workers")
	}
	time.Sleep(4 * time.Second)
	n, err := bound()
	if err != nil {
		return err
	}
	fmt.Printf("  %d of 5 bound; the 4 that fit were released, not held: %s\n", n, reason)
	if err := addNode("train-3"); err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		n, err := bound()
		return err == nil && n == 5, nil
	}); err != nil {
		return fmt.Errorf("the gang never bound after a node was added")
	}
	fmt.Println("  node train-3 added to the pool: all 5 workers bound together")
	return nil
}

// addPoolNode adds an idle node of a pool for batch work: packed by
// requests, not held to a load threshold (the node's own usage-thresholds,
// 0: not checked, override the args: full by requests, a node's estimated
// load passes the default 65%), with a fresh
// NodeMetric as its koordlet would report (LoadAwareScheduling skips nodes
// without one).
func addPoolNode(ctx context.Context, cp *controlplane.ControlPlane, name, cpu string, pool map[string]string) error {
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: name, CPU: cpu, Memory: "32Gi", Labels: pool,
		Annotations: map[string]string{extension.AnnotationCustomUsageThresholds: `{"usageThresholds":{"cpu":0,"memory":0}}`}}); err != nil {
		return err
	}
	return cp.ReportNodeMetric(ctx, name, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0"), corev1.ResourceMemory: resource.MustParse("1Gi")}, time.Now())
}
