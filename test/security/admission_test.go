package security

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koord-project/koord/apis/extension"
)

// A tenant creates a pod already on a node (spec.nodeName), skipping the
// scheduler and so its quota check: with a quota label it would put the
// quota over its max, and with preemptible=false hold capacity beyond its
// min for good. Both are refused; a self-placed pod without them is the
// stock Kubernetes case and is not.
func TestSelfPlacedPodCannotCarryQuotaLabels(t *testing.T) {
	ctx := testContext(t)
	c := start(t, ctx)
	pods := c.tenant.CoreV1().Pods("tenant")
	for key, value := range map[string]string{extension.LabelQuotaName: "team-a", extension.LabelPreemptible: "false"} {
		pod := tenantPod("placed", nil)
		pod.Spec.NodeName = "n1"
		pod.Labels = map[string]string{key: value}
		_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		refused(t, "creating a pod on n1 labelled "+key+"="+value, err, "a pod created with spec.nodeName set skips koord-scheduler and its quota check, so it may not carry label "+key)
	}
	plain := tenantPod("plain", nil)
	plain.Spec.NodeName = "n1"
	if _, err := pods.Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Errorf("a self-placed pod without quota labels: %v", err)
	}
	// Pending, it may carry them: the scheduler checks it when it places it.
	labelled := tenantPod("pending", nil)
	labelled.Labels = map[string]string{extension.LabelQuotaName: "team-a", extension.LabelPreemptible: "false"}
	if _, err := pods.Create(ctx, labelled, metav1.CreateOptions{}); err != nil {
		t.Errorf("a pending pod with quota labels: %v", err)
	}
}

// With koord-manager's webhook down (none runs here), a tenant cannot put
// a pod that is not BE on batch capacity, nor relabel a placed BE pod to
// LSE (an LS pod on batch capacity gets no batch limits and is never
// evicted); the admission policy holds both.
func TestQoSClassHoldsWithoutTheWebhook(t *testing.T) {
	ctx := testContext(t)
	c := start(t, ctx)
	pods := c.tenant.CoreV1().Pods("tenant")
	batch := corev1.ResourceList{extension.BatchCPU: resource.MustParse("2000"), extension.BatchMemory: resource.MustParse("2Gi")}
	onBatch := func(name, qos string) *corev1.Pod {
		pod := tenantPod(name, nil)
		pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: batch, Limits: batch}
		if qos != "" {
			pod.Labels = map[string]string{extension.LabelPodQoS: qos}
		}
		return pod
	}
	for _, qos := range []string{"LS", "LSE", ""} {
		_, err := pods.Create(ctx, onBatch("sneaky-"+strings.ToLower(qos)+"x", qos), metav1.CreateOptions{})
		refused(t, "a pod labelled "+qos+" asking for batch resources", err, "must be labelled koordinator.sh/qosClass=BE")
	}
	be, err := pods.Create(ctx, onBatch("spark", "BE"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a BE pod on batch resources: %v", err)
	}
	relabel := func(qos string) error {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{extension.LabelPodQoS: qos}}})
		_, err := pods.Patch(ctx, be.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	refused(t, "relabelling a pending BE pod on batch resources to LS", relabel("LS"), "must be labelled koordinator.sh/qosClass=BE")
	if err := c.Client.CoreV1().Pods("tenant").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: be.Name},
		Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	refused(t, "relabelling a placed BE pod to LSE", relabel("LSE"), "ValidatingAdmissionPolicy 'koord-qos-class'")
	web, err := pods.Create(ctx, tenantPod("web", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Client.CoreV1().Pods("tenant").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: web.Name},
		Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{extension.LabelPodQoS: "LSR"}}})
	_, err = pods.Patch(ctx, web.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	refused(t, "labelling a placed pod LSR", err, "label koordinator.sh/qosClass of a pod already placed on a node cannot be set or changed (was \"\")")
	got, err := c.Client.CoreV1().Pods("tenant").Get(ctx, be.Name, metav1.GetOptions{})
	if err != nil || got.Labels[extension.LabelPodQoS] != "BE" {
		t.Errorf("the BE pod's class changed: %v %v", got.Labels, err)
	}
}
