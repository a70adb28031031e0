// Package webhook is koord-manager's admission webhooks: the pod mutating
// webhook that applies ClusterColocationProfiles, and the validating
// webhooks for pods, Reservations, ClusterColocationProfiles, ElasticQuotas
// and the slo-controller-config ConfigMap. The rules live in the profile and
// validate packages; this package serves them over the controller-runtime
// webhook server, skips the namespaces it must never intercept, honours the
// feature gates and records koord_manager_webhook_* metrics.
package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	colocationv1alpha1 "github.com/koord-project/koord/apis/colocation/v1alpha1"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/pkg/features"
	"github.com/koord-project/koord/pkg/slo/webhook/profile"
	"github.com/koord-project/koord/pkg/slo/webhook/validate"
)

// Paths the webhook configurations call (Koordinator's, for the pods).
const (
	PathMutatePod         = "/mutate-pod"
	PathValidatePod       = "/validate-pod"
	PathValidateRes       = "/validate-reservation"
	PathValidateProfile   = "/validate-clustercolocationprofile"
	PathValidateConfigMap = "/validate-configmap"
)

// Options configure the handlers.
type Options struct {
	Gates featuregate.FeatureGate
	// SkipNamespaces are never intercepted: kube-system and Koord's own
	// (the webhook configurations exclude them too; this holds if an
	// operator's configuration does not).
	SkipNamespaces []string
	// SLOConfig is the namespace and name of the slo-controller-config
	// ConfigMap; other ConfigMaps are admitted untouched.
	SLOConfig types.NamespacedName
	// Registry gets the metrics.
	Registry prometheus.Registerer
}

// Handlers are the webhook handlers by path.
type Handlers map[string]http.Handler

// New builds the handlers; c reads profiles, namespaces and PriorityClasses
// (the manager's cache).
func New(c client.Reader, o Options) (Handlers, error) {
	m, err := newMetrics(o.Registry)
	if err != nil {
		return nil, err
	}
	gate := func(f featuregate.Feature) bool {
		return o.Gates == nil || o.Gates.Enabled(f)
	}
	skipResources := o.Gates != nil && o.Gates.Enabled(features.ColocationProfileSkipMutatingResources)
	podRules := validate.PodRules{MutablePriority: o.Gates != nil && o.Gates.Enabled(features.ColocationProfileSkipValidatingPriority)}
	a := &admitter{o: o, m: m}
	h := Handlers{
		PathMutatePod: a.serve("mutate-pod", gate(features.PodMutatingWebhook), func(ctx context.Context, req admission.Request) admission.Response {
			// Reads from the cache end with the request (the API server
			// stops waiting after timeoutSeconds).
			return mutatePod(&profile.Mutator{Cluster: &cacheCluster{c: c, ctx: ctx}, SkipResources: skipResources}, req)
		}),
		PathValidatePod: a.serve("validate-pod", gate(features.PodValidatingWebhook), func(ctx context.Context, req admission.Request) admission.Response {
			return validatePod(podRules, req)
		}),
		PathValidateRes: a.serve("validate-reservation", gate(features.PodValidatingWebhook), validateReservation),
		PathValidateProfile: a.serve("validate-clustercolocationprofile", gate(features.PodMutatingWebhook), func(ctx context.Context, req admission.Request) admission.Response {
			return validateProfile(&cacheCluster{c: c, ctx: ctx}, req)
		}),
	}
	// The configuration lives in Koord's own namespace by default: this one
	// webhook must not skip it.
	cm := &admitter{o: o, m: m}
	cm.o.SkipNamespaces = nil
	h[PathValidateConfigMap] = cm.serve("validate-configmap", gate(features.ConfigMapValidatingWebhook), func(ctx context.Context, req admission.Request) admission.Response {
		return validateConfigMap(o.SLOConfig, req)
	})
	// Quota names are cluster-wide: every namespace's quota is checked.
	h[PathValidateQuota] = cm.serve("validate-elasticquota", gate(features.ElasticValidatingWebhook), func(ctx context.Context, req admission.Request) admission.Response {
		return validateQuota(ctx, c, req)
	})
	return h, nil
}

// Register adds the handlers to the manager's webhook server.
func (h Handlers) Register(mgr manager.Manager) {
	srv := mgr.GetWebhookServer()
	for path, handler := range h {
		srv.Register(path, handler)
	}
}

type admitter struct {
	o Options
	m *metrics
}

// serve wraps a rule in the admission plumbing: decoding, the gate, the
// skipped namespaces, metrics. A gate that is off admits everything, so a
// webhook configuration that still calls the path costs one round trip.
func (a *admitter) serve(name string, on bool, fn func(context.Context, admission.Request) admission.Response) http.Handler {
	wh := &admission.Webhook{Handler: admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		start := time.Now()
		var resp admission.Response
		switch {
		case !on:
			resp = admission.Allowed("feature gate off")
		case req.Namespace != "" && slices.Contains(a.o.SkipNamespaces, req.Namespace):
			resp = admission.Allowed("namespace not intercepted")
		default:
			resp = fn(ctx, req)
		}
		a.m.duration.WithLabelValues(name).Observe(time.Since(start).Seconds())
		result := "allowed"
		switch {
		case resp.Result != nil && resp.Result.Code >= 500:
			result = "error"
		case !resp.Allowed:
			result = "denied"
			reason := "unknown"
			if resp.Result != nil && resp.Result.Reason != "" {
				reason = string(resp.Result.Reason)
			}
			a.m.rejections.WithLabelValues(name, reason).Inc()
		case len(resp.Patches) > 0 || len(resp.Patch) > 0:
			result = "patched"
		}
		a.m.requests.WithLabelValues(name, string(req.Operation), result).Inc()
		return resp
	}), RecoverPanic: ptr.To(true)}
	return wh
}

// denied turns field errors into a refusal whose message names each field
// and rule, and whose reason (the metric label) is the first field.
func denied(errs field.ErrorList) admission.Response {
	resp := admission.Denied(errs.ToAggregate().Error())
	resp.Result.Reason = metav1.StatusReason(reasonLabel(errs[0].Field))
	return resp
}

func mutatePod(m *profile.Mutator, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	// A pod being created may carry no namespace yet; the request has it.
	ns := pod.Namespace
	pod.Namespace = req.Namespace
	res, err := m.Apply(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if !res.Mutated() {
		return admission.Allowed("no ClusterColocationProfile selects the pod")
	}
	pod.Namespace = ns
	out, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	resp := admission.PatchResponseFromRaw(req.Object.Raw, out)
	resp.Result = nil
	if len(res.Profiles) > 0 {
		resp.AuditAnnotations = map[string]string{"clustercolocationprofiles": fmt.Sprint(res.Profiles)}
	}
	return resp
}

func validatePod(rules validate.PodRules, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var old *corev1.Pod
	if req.Operation == admissionv1.Update {
		old = &corev1.Pod{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
	}
	if errs := rules.Pod(pod, old); len(errs) > 0 {
		return denied(errs)
	}
	return admission.Allowed("")
}

func validateReservation(_ context.Context, req admission.Request) admission.Response {
	r := &schedulingv1alpha1.Reservation{}
	if err := json.Unmarshal(req.Object.Raw, r); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	warnings := validate.ReservationWarnings(r)
	if errs := validate.Reservation(r); len(errs) > 0 {
		return denied(errs).WithWarnings(warnings...)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

func validateProfile(cl *cacheCluster, req admission.Request) admission.Response {
	p := &colocationv1alpha1.ClusterColocationProfile{}
	if err := json.Unmarshal(req.Object.Raw, p); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var value *int32
	if p.Spec.PriorityClassName != "" {
		if pc, err := cl.PriorityClass(p.Spec.PriorityClassName); err == nil {
			value = &pc.Value
		}
	}
	errs, warnings := validate.Profile(p, value)
	if len(errs) > 0 {
		return denied(errs).WithWarnings(warnings...)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

func validateConfigMap(key types.NamespacedName, req admission.Request) admission.Response {
	if req.Namespace != key.Namespace || req.Name != key.Name {
		return admission.Allowed("")
	}
	cm := &corev1.ConfigMap{}
	if err := json.Unmarshal(req.Object.Raw, cm); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	cm.Namespace, cm.Name = key.Namespace, key.Name
	warnings, err := validate.SLOConfig(cm)
	if err != nil {
		resp := admission.Denied(err.Error())
		resp.Result.Reason = "data"
		return resp.WithWarnings(warnings...)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// cacheCluster reads what the mutator needs from the manager's cache, for
// one request.
type cacheCluster struct {
	c   client.Reader
	ctx context.Context
}

func (c *cacheCluster) Profiles() ([]*colocationv1alpha1.ClusterColocationProfile, error) {
	var l colocationv1alpha1.ClusterColocationProfileList
	// The cache hands out its own objects (no copy): the mutator only reads them.
	if err := c.c.List(c.ctx, &l, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*colocationv1alpha1.ClusterColocationProfile, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

func (c *cacheCluster) NamespaceLabels(name string) (map[string]string, error) {
	ns := &corev1.Namespace{}
	if err := c.c.Get(c.ctx, types.NamespacedName{Name: name}, ns); err != nil {
		return nil, err
	}
	return ns.Labels, nil
}

func (c *cacheCluster) PriorityClass(name string) (*schedulingv1.PriorityClass, error) {
	pc := &schedulingv1.PriorityClass{}
	if err := c.c.Get(c.ctx, types.NamespacedName{Name: name}, pc); err != nil {
		return nil, err
	}
	return pc, nil
}
