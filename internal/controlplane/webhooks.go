package controlplane

import (
	"context"
	"fmt"
	"net"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// WebhookConfigurations are the chart's two configurations
// (deploy/charts/koord/templates/webhooks.yaml) with a URL in place of the
// Service: the API server calls a koord-manager that listens on 127.0.0.1:port
// with --webhook-hosts=127.0.0.1 (tests, the demo). Their caBundle
// is left empty for koord-manager to fill in.
func WebhookConfigurations(port int) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	skip := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "koord-system"}}}}
	url := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", port, path))}
	}
	rule := func(group, version, resource string, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}}}}
	}
	create, update := admissionregistrationv1.Create, admissionregistrationv1.Update
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "koord-mutating-webhook-configuration"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mpod-create.koordinator.sh", ClientConfig: url("/mutate-pod"), Rules: rule("", "v1", "pods", create),
			NamespaceSelector: skip, FailurePolicy: &ignore, SideEffects: &none, TimeoutSeconds: ptr.To[int32](10), AdmissionReviewVersions: []string{"v1"},
		}}}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "koord-validating-webhook-configuration"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "vpod.koordinator.sh", ClientConfig: url("/validate-pod"), Rules: rule("", "v1", "pods", create, update),
			NamespaceSelector: skip, FailurePolicy: &ignore, SideEffects: &none, TimeoutSeconds: ptr.To[int32](10), AdmissionReviewVersions: []string{"v1"},
		}, {
			Name: "vreservation.koordinator.sh", ClientConfig: url("/validate-reservation"), Rules: rule("scheduling.koordinator.sh", "v1alpha1", "reservations", create, update),
			FailurePolicy: &ignore, SideEffects: &none, TimeoutSeconds: ptr.To[int32](10), AdmissionReviewVersions: []string{"v1"},
		}, {
			Name: "vclustercolocationprofile.koordinator.sh", ClientConfig: url("/validate-clustercolocationprofile"), Rules: rule("config.koordinator.sh", "v1alpha1", "clustercolocationprofiles", create, update),
			FailurePolicy: &ignore, SideEffects: &none, TimeoutSeconds: ptr.To[int32](10), AdmissionReviewVersions: []string{"v1"},
		}, {
			Name: "velasticquota.koordinator.sh", ClientConfig: url("/validate-elasticquota"), Rules: rule("scheduling.sigs.k8s.io", "v1alpha1", "elasticquotas", create),
			FailurePolicy: &ignore, SideEffects: &none, TimeoutSeconds: ptr.To[int32](10), AdmissionReviewVersions: []string{"v1"},
		}, {
			Name: "vconfigmap.koordinator.sh", ClientConfig: url("/validate-configmap"), Rules: rule("", "v1", "configmaps", create, update),
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "koord-system"}},
			MatchConditions:   []admissionregistrationv1.MatchCondition{{Name: "slo-controller-config", Expression: "object.metadata.name == 'slo-controller-config'"}},
			FailurePolicy:     &ignore, SideEffects: &none, TimeoutSeconds: ptr.To[int32](10), AdmissionReviewVersions: []string{"v1"},
		}}}
	return m, v
}

// InstallWebhooks picks a free port on 127.0.0.1, creates the two webhook
// configurations calling it there, and returns the port for koord-manager's
// webhook server.
func (cp *ControlPlane) InstallWebhooks(ctx context.Context) (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	m, v := WebhookConfigurations(port)
	if _, err := cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	_, err = cp.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{})
	return port, err
}
