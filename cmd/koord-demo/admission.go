package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	colocationv1alpha1 "github.com/koord-project/koord/apis/colocation/v1alpha1"
	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/controlplane"
)

// admissionScene applies Koordinator's documented ClusterColocationProfile
// and creates a pod written for stock Kubernetes in the namespace it
// selects: koord-manager's webhook turns it into a BE pod on batch
// resources. Then an LSR pod the validating webhook refuses.
func admissionScene(ctx context.Context, cp *controlplane.ControlPlane) error {
	fmt.Println("\nAdmission: Koordinator's ClusterColocationProfile example selects namespace spark; koord-manager's webhooks")
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "spark",
		Labels: map[string]string{"koordinator.sh/enable-colocation": "true"}}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	profile := &colocationv1alpha1.ClusterColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: "colocation-profile-example"},
		Spec: colocationv1alpha1.ClusterColocationProfileSpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"koordinator.sh/enable-colocation": "true"}},
			QoSClass:          "BE", PriorityClassName: "koord-batch", KoordinatorPriority: ptr.To[int32](1000), SchedulerName: "koord-scheduler",
		}}
	if _, err := cp.Koord.ConfigV1alpha1().ClusterColocationProfiles().Create(ctx, profile, metav1.CreateOptions{}); err != nil {
		return err
	}
	pod, err := controlplane.MakePod(controlplane.PodSpec{Namespace: "spark", Name: "spark-executor", CPU: "2", Memory: "4Gi", Guaranteed: true})
	if err != nil {
		return err
	}
	// The profile reaches koord-manager's cache a moment after it is
	// created; dry runs (answered by the webhooks, stored nowhere) tell when.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods("spark").Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && p.Labels[extension.LabelPodQoS] == "BE", nil
	})
	if err != nil {
		return fmt.Errorf("the webhook never applied the profile: %w", err)
	}
	created, err := cp.Client.CoreV1().Pods("spark").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	fmt.Println("  pod spark/spark-executor written as: cpu 2, memory 4Gi, default scheduler")
	req := created.Spec.Containers[0].Resources.Requests
	cpu, mem := req[extension.BatchCPU], req[extension.BatchMemory]
	fmt.Printf("  as admitted: qosClass %s, priority %d (%s), scheduler %s, %s %d, %s %s\n",
		created.Labels[extension.LabelPodQoS], *created.Spec.Priority, created.Spec.PriorityClassName, created.Spec.SchedulerName,
		extension.BatchCPU, cpu.Value(), extension.BatchMemory, mem.String())
	bound, err := cp.WaitForPodBound(ctx, "spark", "spark-executor", time.Minute)
	if err != nil {
		return err
	}
	n, err := cp.Client.CoreV1().Nodes().Get(ctx, bound.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	batch := n.Status.Allocatable[extension.BatchCPU]
	fmt.Printf("  placed on %s by its batch capacity (%s %d)\n", n.Name, extension.BatchCPU, batch.Value())

	lsr, err := controlplane.MakePod(controlplane.PodSpec{Namespace: "default", Name: "lsr-half", CPU: "1500m", Memory: "1Gi", Guaranteed: true,
		Labels: map[string]string{extension.LabelPodQoS: "LSR"}, PriorityClassName: "koord-prod"})
	if err != nil {
		return err
	}
	_, err = cp.Client.CoreV1().Pods("default").Create(ctx, lsr, metav1.CreateOptions{})
	if err == nil {
		return fmt.Errorf("an LSR pod asking for 1500m CPUs was admitted")
	}
	fmt.Printf("  LSR pod asking for 1500m CPUs: refused: %s\n", afterLast(err.Error(), "denied the request: "))
	return nil
}
