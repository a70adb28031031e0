package security

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/descheduler/v1alpha2"
	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/pkg/descheduler"
)

const guardConfig = `
apiVersion: descheduler/v1alpha2
kind: DeschedulerConfiguration
deschedulingInterval: 1h
profiles:
- name: koord-descheduler
  plugins:
    balance:
      enabled:
        - name: LowNodeLoad
  pluginConfig:
  - name: MigrationController
    args:
      apiVersion: descheduler/v1alpha2
      kind: MigrationControllerArgs
      namespaces: {exclude: [kube-system, koord-system]}
  - name: LowNodeLoad
    args:
      apiVersion: descheduler/v1alpha2
      kind: LowNodeLoadArgs
      lowThresholds: {cpu: 30, memory: 90}
      highThresholds: {cpu: 70, memory: 95}
`

// PodMigrationJobs created directly, not by LowNodeLoad, for pods the
// descheduler would never move: one in kube-system (which its
// configuration excludes), a DaemonSet's, and one whose eviction cost is
// 2147483647. Each fails with ForbiddenMigratePod, saying why, and every
// pod is still there.
func TestPodMigrationJobsCannotEvictAnything(t *testing.T) {
	ctx := testContext(t)
	c := start(t, ctx)
	cfg, err := v1alpha2.Load([]byte(guardConfig))
	if err != nil {
		t.Fatal(err)
	}
	dctx, stop := context.WithCancel(ctx)
	mgr, err := descheduler.New(dctx, c.Config, descheduler.Options{Config: cfg, Namespace: "koord-system", MetricsAddr: "0", HealthAddr: "0", InProcess: true})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(dctx) }()
	t.Cleanup(func() { stop(); <-done })

	victims := map[string]string{ // namespace/name → what the job must say
		"kube-system/coredns": "namespace kube-system is not one the descheduler moves pods of",
		"default/node-agent":  "it is a DaemonSet's pod",
		"default/precious":    "is 2147483647: it is never moved",
	}
	for key := range victims {
		ns, name, _ := strings.Cut(key, "/")
		pod, err := controlplane.MakePod(controlplane.PodSpec{Namespace: ns, Name: name, CPU: "100m", Memory: "64Mi"})
		if err != nil {
			t.Fatal(err)
		}
		pod.Spec.NodeName = "n1"
		switch name {
		case "node-agent":
			pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds-uid", Controller: ptr.To(true)}}
		case "precious":
			pod.Annotations = map[string]string{extension.AnnotationEvictionCost: "2147483647"}
		}
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		job := &schedulingv1alpha1.PodMigrationJob{ObjectMeta: metav1.ObjectMeta{Name: "move-" + name},
			Spec: schedulingv1alpha1.PodMigrationJobSpec{Mode: schedulingv1alpha1.PodMigrationJobModeEvictionDirectly,
				PodRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name}}}
		if _, err := c.Koord.SchedulingV1alpha1().PodMigrationJobs().Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for key, want := range victims {
		ns, name, _ := strings.Cut(key, "/")
		var job *schedulingv1alpha1.PodMigrationJob
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			job, err = c.Koord.SchedulingV1alpha1().PodMigrationJobs().Get(ctx, "move-"+name, metav1.GetOptions{})
			return err == nil && job.Status.Phase != "" && job.Status.Phase != schedulingv1alpha1.PodMigrationJobPending, nil
		})
		if err != nil || job.Status.Phase != schedulingv1alpha1.PodMigrationJobFailed || job.Status.Reason != schedulingv1alpha1.PodMigrationJobReasonForbiddenMigratePod ||
			!strings.Contains(job.Status.Message, want) {
			t.Errorf("job for %s: %+v, want Failed ForbiddenMigratePod saying %q", key, job.Status, want)
		}
		if _, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s is gone: %v", key, err)
		}
	}
}
