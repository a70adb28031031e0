package webhook

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/pkg/features"
)

// A quota may not take the name another namespace's quota has (names are
// cluster-wide); the same name in its own namespace, or a new name, is fine.
func TestValidateQuotaRefusesTakenNames(t *testing.T) {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = schedulingsigsv1alpha1.AddToScheme(s)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&schedulingsigsv1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "team-b"}}).Build()
	h, err := New(c, Options{Gates: features.New(), SkipNamespaces: []string{"kube-system"}, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	quota := func(ns, name string) *schedulingsigsv1alpha1.ElasticQuota {
		return &schedulingsigsv1alpha1.ElasticQuota{TypeMeta: metav1.TypeMeta{APIVersion: "scheduling.sigs.k8s.io/v1alpha1", Kind: "ElasticQuota"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	resp := call(t, h[PathValidateQuota], review(t, admissionv1.Create, "aaa", "team-b", quota("aaa", "team-b"), nil, false))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "metadata.name: Duplicate value") || !strings.Contains(resp.Result.Message, "taken by ElasticQuota team-b/team-b") {
		t.Errorf("a second team-b in namespace aaa: %+v, want refused naming the owner", resp.Result)
	}
	for _, q := range []*schedulingsigsv1alpha1.ElasticQuota{quota("team-b", "team-b"), quota("aaa", "aaa")} {
		if resp := call(t, h[PathValidateQuota], review(t, admissionv1.Create, q.Namespace, q.Name, q, nil, false)); !resp.Allowed {
			t.Errorf("%s/%s refused: %v", q.Namespace, q.Name, resp.Result)
		}
	}
	// kube-system's quotas are held to it too (the tree is cluster-wide).
	if resp := call(t, h[PathValidateQuota], review(t, admissionv1.Create, "kube-system", "team-b", quota("kube-system", "team-b"), nil, false)); resp.Allowed {
		t.Error("a team-b quota in kube-system was admitted")
	}
	off := features.New()
	_ = off.Set("ElasticValidatingWebhook=false")
	h, _ = New(c, Options{Gates: off, Registry: prometheus.NewRegistry()})
	if resp := call(t, h[PathValidateQuota], review(t, admissionv1.Create, "aaa", "team-b", quota("aaa", "team-b"), nil, false)); !resp.Allowed {
		t.Error("ElasticValidatingWebhook=false still refuses")
	}
}
