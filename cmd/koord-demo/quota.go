package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/extension"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
)

// quotaScene: two teams' ElasticQuotas (min 4, max 8 CPUs each) on a pool
// of 8 CPUs. team-a's non-preemptible pods fit in its min, and no more of
// them; team-a borrows team-b's idle min; its ninth pod waits, the quota
// full; team-b's pods ask the min back and team-a's borrowed pods
// are preempted, its mid-priority ones first, though team-b's have the
// lower priority, and no more than team-b needs.
func quotaScene(ctx context.Context, cp *controlplane.ControlPlane) error {
	fmt.Println("\nElastic quotas: team-a and team-b, min 4 max 8 CPUs each, on pool quota (2 nodes of 4 CPUs)")
	pool := map[string]string{"pool": "quota"}
	for _, n := range []string{"quota-1", "quota-2"} {
		if err := addPoolNode(ctx, cp, n, "4", pool); err != nil {
			return err
		}
	}
	for _, team := range []string{"team-a", "team-b"} {
		if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		cpu := func(v string) corev1.ResourceList {
			return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
		}
		if _, err := cp.Koord.SchedulingSigsV1alpha1().ElasticQuotas(team).Create(ctx, &schedulingsigsv1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: team},
			Spec: schedulingsigsv1alpha1.ElasticQuotaSpec{Min: cpu("4"), Max: cpu("8")}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	// Nothing runs the pods here: finish deleting the preempted ones as
	// their kubelet would.
	stop, err := finishDeletions(ctx, cp, "team-a")
	if err != nil {
		return err
	}
	defer stop()
	create := func(ns, name, class string, labels map[string]string) error {
		pod, err := controlplane.MakePod(controlplane.PodSpec{Namespace: ns, Name: name, SchedulerName: "koord-scheduler", CPU: "1", Memory: "256Mi", PriorityClassName: class, Labels: labels})
		if err != nil {
			return err
		}
		pod.Spec.NodeSelector = pool
		_, err = cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	}
	// A tenant may keep its pods from preemption, within its min only.
	pinned := map[string]string{extension.LabelPreemptible: "false"}
	for i := 0; i < 4; i++ {
		if err := create("team-a", fmt.Sprintf("a-%d", i), string(extension.PriorityProd), pinned); err != nil {
			return err
		}
	}
	if _, err := waitBound(ctx, cp, "team-a", 4); err != nil {
		return err
	}
	if err := create("team-a", "a-pinned", string(extension.PriorityProd), pinned); err != nil {
		return err
	}
	msg, err := waitPending(ctx, cp, "team-a", "a-pinned", "must fit in the quota's min")
	if err != nil {
		return err
	}
	fmt.Printf("  a-0..3 (koord-prod, %s=false) bound; a fifth such pod waits: %s\n", extension.LabelPreemptible, msg)
	for i := 4; i < 8; i++ {
		if err := create("team-a", fmt.Sprintf("a-%d", i), string(extension.PriorityMid), nil); err != nil {
			return err
		}
	}
	if _, err := waitBound(ctx, cp, "team-a", 8); err != nil {
		return err
	}
	fmt.Println("  team-a: 8 pods bound (a-4..7 koord-mid), 4 CPUs beyond its min, borrowed from idle team-b")
	if err := create("team-a", "a-8", string(extension.PriorityProd), nil); err != nil {
		return err
	}
	msg, err = waitPending(ctx, cp, "team-a", "a-8", "is full")
	if err != nil {
		return err
	}
	fmt.Printf("  a-8 waits: %s\n", msg)
	for i := 0; i < 4; i++ {
		if err := create("team-b", fmt.Sprintf("b-%d", i), "", nil); err != nil {
			return err
		}
	}
	if _, err := waitBound(ctx, cp, "team-b", 4); err != nil {
		return err
	}
	left, err := waitBound(ctx, cp, "team-a", 4)
	if err != nil {
		return err
	}
	fmt.Printf("  team-b's 4 pods (priority 0) take back its min: bound; team-a keeps its min with %s (the koord-mid pods went)\n", strings.Join(left, " "))
	var used, runtime string
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		eq, err := cp.Koord.SchedulingSigsV1alpha1().ElasticQuotas("team-a").Get(ctx, "team-a", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		used, runtime = eq.Status.Used.Cpu().String(), eq.Annotations[extension.AnnotationRuntime]
		return used == "4", nil
	}); err != nil {
		return fmt.Errorf("koord-manager did not write team-a's used (last %q)", used)
	}
	fmt.Printf("  koord-manager wrote team-a's figures: status.used cpu %s, %s %s\n", used, extension.AnnotationRuntime, runtime)
	return nil
}

// finishDeletions deletes at once the pods of a namespace that something
// started deleting, as kubelet would once their containers stopped.
func finishDeletions(ctx context.Context, cp *controlplane.ControlPlane, ns string) (func(), error) {
	w, err := cp.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	go func() {
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Modified && pod.DeletionTimestamp != nil {
				_ = cp.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			}
		}
	}()
	return w.Stop, nil
}

// waitBound waits until want pods of the namespace are bound, and names them.
func waitBound(ctx context.Context, cp *controlplane.ControlPlane, ns string, want int) ([]string, error) {
	var names []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		names = names[:0]
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				names = append(names, p.Name)
			}
		}
		return len(names) == want, nil
	})
	if err != nil {
		why := ""
		if pods, err := cp.Client.CoreV1().Pods(ns).List(context.WithoutCancel(ctx), metav1.ListOptions{}); err == nil {
			for _, p := range pods.Items {
				if p.Spec.NodeName == "" {
					why += fmt.Sprintf("; %s: %s", p.Name, controlplane.PodUnschedulableMessage(&p))
				}
			}
		}
		return nil, fmt.Errorf("%s: %d pods bound (%v), want %d%s", ns, len(names), names, want, why)
	}
	sort.Strings(names)
	return names, nil
}

// waitPending waits until a pod is unschedulable with a message containing
// want, and returns the message.
func waitPending(ctx context.Context, cp *controlplane.ControlPlane, ns, name, want string) (string, error) {
	var msg string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		msg = controlplane.PodUnschedulableMessage(p)
		return strings.Contains(msg, want), nil
	})
	if err != nil {
		return "", fmt.Errorf("pod %s/%s: want pending with %q, last %q", ns, name, want, msg)
	}
	// The quota's own words, without the scheduler's preamble.
	if i := strings.Index(msg, "quota "); i >= 0 {
		msg = msg[i:]
	}
	if i := strings.Index(msg, ". preemption"); i >= 0 {
		msg = msg[:i]
	}
	return msg, nil
}
