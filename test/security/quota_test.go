package security

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/koord-project/koord/apis/extension"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/manifests"
	"github.com/koord-project/koord/pkg/slo/manager"
)

// team-b's quota exists; later a quota of the same name is made in
// namespace aaa (koord-manager's webhook down). It used to take the name,
// since "aaa" sorts first, and team-b's pods waited on an unusable quota;
// the older quota keeps it now. With the webhook up, the second quota is
// refused at creation, naming the first.
func TestQuotaNameClashOlderWins(t *testing.T) {
	ctx := testContext(t)
	c := start(t, ctx)
	createNamespaces(t, ctx, c.ControlPlane, "team-b", "aaa", "ccc")
	reportIdle(t, ctx, c.ControlPlane, "n1", "n2")
	quota := func(ns string) *schedulingsigsv1alpha1.ElasticQuota {
		cpu := func(v string) corev1.ResourceList {
			return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
		}
		return &schedulingsigsv1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-b"},
			Spec: schedulingsigsv1alpha1.ElasticQuotaSpec{Min: cpu("4"), Max: cpu("8")}}
	}
	if _, err := c.Koord.SchedulingSigsV1alpha1().ElasticQuotas("team-b").Create(ctx, quota("team-b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // creation times are in seconds
	if _, err := c.Koord.SchedulingSigsV1alpha1().ElasticQuotas("aaa").Create(ctx, quota("aaa"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sched, err := c.StartScheduler(ctx, manifests.SchedulerConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sched.Stop)
	if _, err := c.CreatePod(ctx, controlplane.PodSpec{Namespace: "team-b", Name: "worker", CPU: "1", Memory: "1Gi", SchedulerName: "koord-scheduler",
		Labels: map[string]string{extension.LabelQuotaName: "team-b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForPodBound(ctx, "team-b", "worker", 30*time.Second); err != nil {
		p, _ := c.Client.CoreV1().Pods("team-b").Get(ctx, "worker", metav1.GetOptions{})
		t.Errorf("team-b's pod in its own, older quota: %v (%s)", err, controlplane.PodUnschedulableMessage(p))
	}

	port, err := c.InstallWebhooks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	startManager(t, ctx, c.ControlPlane, func(o *manager.Options) {
		o.Webhook = manager.WebhookOptions{Host: "127.0.0.1", Port: port, CertSecret: "koord-webhook-certs", CertSelfManaged: true,
			CertHosts: []string{"127.0.0.1"}, CertValidity: time.Hour, MutatingConfigurations: []string{"koord-mutating-webhook-configuration"},
			ValidatingConfigurations: []string{"koord-validating-webhook-configuration"}}
	})
	var last error
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = c.Koord.SchedulingSigsV1alpha1().ElasticQuotas("ccc").Create(ctx, quota("ccc"), metav1.CreateOptions{})
		if last == nil {
			_ = c.Koord.SchedulingSigsV1alpha1().ElasticQuotas("ccc").Delete(ctx, "team-b", metav1.DeleteOptions{})
		}
		return last != nil && strings.Contains(last.Error(), "quota names are cluster-wide"), nil
	})
	if err != nil {
		t.Errorf("a third team-b quota with the webhook up: %v, want refused as a taken name", last)
	}
}
