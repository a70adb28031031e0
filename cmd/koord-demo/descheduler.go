package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/descheduler/v1alpha2"
	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/pkg/descheduler"
)

const demoDeschedulerConfig = `
apiVersion: descheduler/v1alpha2
kind: DeschedulerConfiguration
deschedulingInterval: 1s
profiles:
- name: koord-descheduler
  plugins:
    balance:
      enabled: [{name: LowNodeLoad}]
  pluginConfig:
  - name: MigrationController
    args: {defaultJobTTL: 1m, defaultDeleteOptions: {gracePeriodSeconds: 0}, namespaces: {exclude: [koord-system]}}
  - name: LowNodeLoad
    args:
      lowThresholds: {cpu: 40, memory: 90}
      highThresholds: {cpu: 80, memory: 95}
      anomalyCondition: {consecutiveAbnormalities: 2}
`

// deschedulerScene: node-a stays at 90 % CPU with two batch pods of a
// ReplicaSet on it; koord-descheduler's LowNodeLoad moves one through a
// PodMigrationJob (the replacement's reservation Available on another node
// before the eviction). The demo plays the ReplicaSet controller: it creates
// the replacement.
func deschedulerScene(ctx context.Context, cp *controlplane.ControlPlane) error {
	fmt.Println("\nDescheduling: node-a reports 90 % CPU; LowNodeLoad (high mark 80 %, low 40 %, hot after 2 rounds) with two batch pods of a ReplicaSet on it")
	rs, err := cp.Client.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "batch"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "batch"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "batch"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	pod := func(name, node string) (*corev1.Pod, error) {
		p, err := controlplane.MakePod(controlplane.PodSpec{Name: name, CPU: "1", Memory: "1Gi", SchedulerName: "koord-scheduler",
			Labels: map[string]string{"app": "batch", extension.LabelPodQoS: "BE"}, PriorityClassName: "koord-batch"})
		if err != nil {
			return nil, err
		}
		p.Spec.NodeName = node
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
		// Extended requests are what a batch pod asks for (the webhook's doing).
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{extension.BatchCPU: resource.MustParse("1000"), extension.BatchMemory: resource.MustParse("1Gi")},
			Limits:   corev1.ResourceList{extension.BatchCPU: resource.MustParse("1000"), extension.BatchMemory: resource.MustParse("1Gi")}}
		return cp.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	}
	var usage []*slov1alpha1.PodMetricInfo
	for _, name := range []string{"batch-0", "batch-1"} {
		if _, err := pod(name, "node-a"); err != nil {
			return err
		}
		usage = append(usage, &slov1alpha1.PodMetricInfo{Namespace: "default", Name: name,
			PodUsage: slov1alpha1.ResourceMap{ResourceList: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}})
	}
	if err := cp.ReportNodeMetric(ctx, "node-a", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7200m"), corev1.ResourceMemory: resource.MustParse("20Gi")}, time.Now(), usage...); err != nil {
		return err
	}
	cfg, err := v1alpha2.Load([]byte(demoDeschedulerConfig))
	if err != nil {
		return err
	}
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	mgr, err := descheduler.New(dctx, cp.Config, descheduler.Options{Config: cfg, Namespace: managerNamespace, MetricsAddr: "0", HealthAddr: "0"})
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(dctx) }()
	defer func() { stop(); <-done }()

	var job schedulingv1alpha1.PodMigrationJob
	evicted := func(j *schedulingv1alpha1.PodMigrationJob) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == schedulingv1alpha1.PodMigrationJobConditionEviction && c.Status == schedulingv1alpha1.PodMigrationJobConditionStatusTrue {
				return true
			}
		}
		return false
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := cp.Koord.SchedulingV1alpha1().PodMigrationJobs().List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) == 0 {
			return false, nil
		}
		job = l.Items[0]
		return evicted(&job), nil
	})
	if err != nil {
		return fmt.Errorf("no pod was moved off node-a: %+v", job.Status)
	}
	res, err := cp.Koord.SchedulingV1alpha1().Reservations().Get(ctx, job.Spec.ReservationOptions.ReservationRef.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("  PodMigrationJob %s: %s\n", job.Name, job.Annotations["descheduler.koordinator.sh/reason"])
	fmt.Printf("  reservation %s Available on %s, then %s/%s evicted\n", res.Name, res.Status.NodeName, job.Spec.PodRef.Namespace, job.Spec.PodRef.Name)
	// The ReplicaSet's replacement (kube-controller-manager would create it).
	if _, err := pod("batch-2", ""); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		j, err := cp.Koord.SchedulingV1alpha1().PodMigrationJobs().Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		job = *j
		return j.Status.Phase == schedulingv1alpha1.PodMigrationJobSucceeded || j.Status.Phase == schedulingv1alpha1.PodMigrationJobFailed, nil
	})
	if err != nil || job.Status.Phase != schedulingv1alpha1.PodMigrationJobSucceeded {
		return fmt.Errorf("job %s: %s %s", job.Name, job.Status.Phase, job.Status.Message)
	}
	fmt.Printf("  the ReplicaSet's replacement %s took it: job %s (kubectl get pmj)\n", job.Status.PodRef.Name, job.Status.Phase)
	return nil
}
