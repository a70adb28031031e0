// Package chart tests the Helm chart deploy/charts/koord by rendering it
// with the helm binary `make helm` builds ($HELM) and reading what comes out.
package chart

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"sigs.k8s.io/yaml"

	"github.com/koord-project/koord/apis/descheduler/v1alpha2"
)

func chartDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "deploy", "charts", "koord")
}

func helm(t *testing.T, args ...string) string {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		t.Skip("set HELM to the helm binary (make chart-test builds it into _output/bin)")
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out.String()
}

// render is `helm template` in namespace koord-system on Kubernetes 1.37.
func render(t *testing.T, extra ...string) []*unstructured.Unstructured {
	t.Helper()
	out := helm(t, append([]string{"template", "koord", chartDir(t), "--namespace", "koord-system", "--kube-version", "1.37.2"}, extra...)...)
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(out, "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, doc)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

func byKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func names(objs []*unstructured.Unstructured) string {
	var n []string
	for _, o := range objs {
		n = append(n, o.GetName())
	}
	return strings.Join(n, ",")
}

func TestLint(t *testing.T) {
	helm(t, "lint", chartDir(t), "--kube-version", "1.37.2")
}

func TestDefaults(t *testing.T) {
	objs := render(t)
	if got := names(byKind(objs, "PriorityClass")); got != "koord-prod,koord-mid,koord-batch,koord-free" {
		t.Errorf("PriorityClasses %s", got)
	}
	if len(byKind(objs, "ServiceMonitor")) != 0 {
		t.Error("a ServiceMonitor on a cluster without monitoring.coreos.com/v1 would fail the install")
	}
	for _, kind := range []string{"Deployment", "DaemonSet"} {
		for _, o := range byKind(objs, kind) {
			image := containers(t, o)[0]["image"]
			if !strings.HasPrefix(image.(string), "koord/") || !strings.HasSuffix(image.(string), ":0.1.0") {
				t.Errorf("%s %s image %v", kind, o.GetName(), image)
			}
		}
	}
	for _, name := range []string{"koord-scheduler", "koord-manager"} {
		d := named(t, objs, "Deployment", name)
		if r, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas"); r != float64(2) {
			t.Errorf("%s replicas %v, want 2 (leader election)", name, r)
		}
	}
	if args := strings.Join(toStrings(containers(t, named(t, objs, "Deployment", "koord-manager"))[0]["args"]), " "); !strings.Contains(args, "--leader-elect=true") {
		t.Errorf("koord-manager args %s lack leader election", args)
	}
	cfg := named(t, objs, "ConfigMap", "slo-controller-config")
	if c, _, _ := unstructured.NestedString(cfg.Object, "data", "colocation-config"); !strings.Contains(c, `"enable":true`) {
		t.Errorf("slo-controller-config colocation-config %q", c)
	}
	// The uninstall hook and everything it needs run before Helm deletes the
	// release, and are removed once it succeeded.
	hooks := 0
	for _, o := range objs {
		if o.GetAnnotations()["helm.sh/hook"] == "pre-delete" {
			hooks++
			if o.GetAnnotations()["helm.sh/hook-delete-policy"] == "" {
				t.Errorf("hook %s %s is never deleted", o.GetKind(), o.GetName())
			}
		}
	}
	if job := named(t, objs, "Job", "koord-cleanup"); job.GetAnnotations()["helm.sh/hook"] != "pre-delete" || hooks != 6 {
		t.Errorf("pre-delete hook: job annotations %v, %d hook objects (want the Job, its ServiceAccount, 2 Roles, 2 RoleBindings)", job.GetAnnotations(), hooks)
	}
	ds := byKind(objs, "DaemonSet")[0]
	if hostPID, _, _ := unstructured.NestedBool(ds.Object, "spec", "template", "spec", "hostPID"); !hostPID {
		t.Error("koordlet without hostPID")
	}
	sc := containers(t, ds)[0]["securityContext"].(map[string]any)
	if sc["privileged"] == true {
		t.Error("koordlet is privileged; it should list capabilities")
	}
}

func named(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range byKind(objs, kind) {
		if o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

func containers(t *testing.T, o *unstructured.Unstructured) []map[string]any {
	t.Helper()
	cs, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if err != nil || len(cs) == 0 {
		t.Fatalf("%s %s: no containers (%v)", o.GetKind(), o.GetName(), err)
	}
	var out []map[string]any
	for _, c := range cs {
		out = append(out, c.(map[string]any))
	}
	return out
}

func TestCRDToggles(t *testing.T) {
	if crds := byKind(render(t, "--set", "crds.managed=false"), "CustomResourceDefinition"); len(crds) != 0 {
		t.Errorf("crds.managed=false installs %s", names(crds))
	}
	// PodGroup and ElasticQuota come in Koordinator's group by default, as
	// its chart installs them.
	if got := names(byKind(render(t), "CustomResourceDefinition")); got !=
		"recommendationprofiles.analysis.koordinator.sh,recommendations.analysis.koordinator.sh,clustercolocationprofiles.config.koordinator.sh,podmigrationjobs.scheduling.koordinator.sh,reservations.scheduling.koordinator.sh,elasticquotas.scheduling.sigs.k8s.io,podgroups.scheduling.sigs.k8s.io,nodemetrics.slo.koordinator.sh,nodeslos.slo.koordinator.sh" {
		t.Errorf("default CRDs %s", got)
	}
	if got := names(byKind(render(t, "--set", "crds.nodeslos=false,crds.noderesourcetopologies=true,crds.podgroups=false,crds.elasticquotas=false,crds.clustercolocationprofiles=false,crds.podmigrationjobs=false,crds.recommendations=false,crds.recommendationprofiles=false"), "CustomResourceDefinition")); got !=
		"reservations.scheduling.koordinator.sh,nodemetrics.slo.koordinator.sh,noderesourcetopologies.topology.node.k8s.io" {
		t.Errorf("toggled CRDs %s", got)
	}
	if got := names(byKind(render(t, "--set", "crds.schedulerPluginsPodgroups=true,crds.schedulerPluginsElasticquotas=true,crds.podgroups=false,crds.elasticquotas=false,crds.reservations=false,crds.clustercolocationprofiles=false,crds.podmigrationjobs=false,crds.recommendations=false,crds.recommendationprofiles=false"), "CustomResourceDefinition")); got !=
		"elasticquotas.scheduling.x-k8s.io,podgroups.scheduling.x-k8s.io,nodemetrics.slo.koordinator.sh,nodeslos.slo.koordinator.sh" {
		t.Errorf("toggled CRDs %s", got)
	}
}

// The recommender is off by default; on, koord-manager gets its gate and
// the settings.
func TestRecommender(t *testing.T) {
	args := func(objs []*unstructured.Unstructured) []string {
		return toStrings(containers(t, named(t, objs, "Deployment", "koord-manager"))[0]["args"])
	}
	if a := args(render(t)); slices.ContainsFunc(a, func(s string) bool {
		return strings.Contains(s, "recommender") || strings.Contains(s, "ResourceRecommender")
	}) {
		t.Errorf("the recommender is on by default: %v", a)
	}
	a := args(render(t, "--set", "manager.recommender.enabled=true,manager.recommender.cpuPercentile=0.9,manager.recommender.warmUp=30m"))
	for _, want := range []string{"--feature-gates=ResourceRecommender=true", "--recommender-cpu-percentile=0.9", "--recommender-warm-up=30m", "--recommender-half-life=24h", "--recommender-min-samples=30"} {
		if !slices.Contains(a, want) {
			t.Errorf("manager.recommender.enabled: args %v lack %s", a, want)
		}
	}
}

// A tag of digits only (a short commit hash can be one) given with --set is
// a number to Helm; the image reference must still carry it as written.
func TestNumericImageTag(t *testing.T) {
	objs := render(t, "--set", "imageTag=4559440")
	for _, kind := range []string{"Deployment", "DaemonSet", "Job"} {
		for _, o := range byKind(objs, kind) {
			if image := containers(t, o)[0]["image"].(string); !strings.HasSuffix(image, ":4559440") {
				t.Errorf("%s image %s, want tag 4559440", o.GetName(), image)
			}
		}
	}
}

func TestValues(t *testing.T) {
	objs := render(t, "--set", `featureGates=A=true\,B=true`, "--set", "imageRepositoryHost=registry.example.com",
		"--set", "scheduler.hostNetwork=true", "--set", "manager.hostNetwork=true", "--set", "scheduler.featureGates=C=false", "--namespace", "custom")
	sched := named(t, objs, "Deployment", "koord-scheduler")
	for _, o := range []*unstructured.Unstructured{sched, named(t, objs, "Deployment", "koord-manager"), named(t, objs, "DaemonSet", "koordlet")} {
		want := "--feature-gates=A=true,B=true"
		if o == sched {
			want += ",C=false"
		}
		if args := strings.Join(toStrings(containers(t, o)[0]["args"]), " "); !strings.Contains(args, want) {
			t.Errorf("%s args %s lack %s", o.GetName(), args, want)
		}
	}
	for _, name := range []string{"koord-manager", "koord-scheduler"} {
		d := named(t, objs, "Deployment", name)
		if hn, _, _ := unstructured.NestedBool(d.Object, "spec", "template", "spec", "hostNetwork"); !hn {
			t.Errorf("%s: hostNetwork=true not applied", name)
		}
		// Two replicas on one node's network would collide on their ports.
		if _, found, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"); !found {
			t.Errorf("%s on the host network without anti-affinity between its replicas", name)
		}
	}
	if args := strings.Join(toStrings(containers(t, named(t, objs, "Job", "koord-cleanup"))[0]["args"]), " "); !strings.Contains(args, "--koordlet-daemonset=custom/koordlet") {
		t.Errorf("cleanup hook args %s do not name the release's koordlet", args)
	}
	for _, kind := range []string{"Deployment", "DaemonSet", "Job"} {
		for _, o := range byKind(objs, kind) {
			if image := containers(t, o)[0]["image"].(string); !strings.HasPrefix(image, "registry.example.com/koord/") {
				t.Errorf("%s image %s not under imageRepositoryHost", o.GetName(), image)
			}
		}
	}
	if hn, _, _ := unstructured.NestedBool(sched.Object, "spec", "template", "spec", "hostNetwork"); !hn {
		t.Error("scheduler.hostNetwork=true not applied")
	}
	// RBAC follows the release namespace.
	for _, b := range byKind(objs, "ClusterRoleBinding") {
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		if ns := subjects[0].(map[string]any)["namespace"]; ns != "custom" {
			t.Errorf("%s binds a ServiceAccount in %v, want the release namespace", b.GetName(), ns)
		}
	}
	if sm := byKind(render(t, "--api-versions", "monitoring.coreos.com/v1/ServiceMonitor"), "ServiceMonitor"); len(sm) != 1 {
		t.Errorf("with monitoring.coreos.com/v1 served: %d ServiceMonitors, want 1", len(sm))
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// The trust model as the chart installs it (docs/security.md): the admission
// policies, in the release's namespace; scheduler and manager as non-root;
// koordlet writes only cgroups; koord-manager's metrics served securely.
func TestTrustBoundaries(t *testing.T) {
	objs := render(t, "--namespace", "custom")
	policies := byKind(objs, "ValidatingAdmissionPolicy")
	if len(policies) != 5 || len(byKind(objs, "ValidatingAdmissionPolicyBinding")) != 5 {
		t.Fatalf("policies %s, want five with their bindings", names(policies))
	}
	for _, p := range policies {
		text := fmt.Sprint(p.Object)
		if strings.Contains(text, "koord-system") || !strings.Contains(text, "system:serviceaccount:custom:") {
			t.Errorf("policy %s is not about the release's namespace: %s", p.GetName(), text)
		}
	}
	if off := render(t, "--set", "admissionPolicies.enabled=false"); len(byKind(off, "ValidatingAdmissionPolicy")) != 0 {
		t.Error("admissionPolicies.enabled=false still installs policies")
	}
	for _, name := range []string{"koord-scheduler", "koord-manager"} {
		sc, _ := containers(t, named(t, objs, "Deployment", name))[0]["securityContext"].(map[string]any)
		if sc["runAsNonRoot"] != true {
			t.Errorf("%s: securityContext %v, want runAsNonRoot", name, sc)
		}
	}
	koordlet := containers(t, named(t, objs, "DaemonSet", "koordlet"))[0]
	mounts := map[string]bool{} // mount path → writable
	for _, m := range koordlet["volumeMounts"].([]any) {
		m := m.(map[string]any)
		mounts[m["mountPath"].(string)] = m["readOnly"] != true
	}
	want := map[string]bool{"/host/sys": false, "/host/sys/fs/cgroup": true, "/host/proc": false, "/host/kubelet/config.yaml": false, "/host/kubelet/pod-resources": false}
	if fmt.Sprint(mounts) != fmt.Sprint(want) {
		t.Errorf("koordlet mounts (path: writable) %v, want %v", mounts, want)
	}
	if args := strings.Join(toStrings(koordlet["args"]), " "); !strings.Contains(args, "--scheduler-names=koord-scheduler") {
		t.Errorf("koordlet args %s lack --scheduler-names", args)
	}
	if args := strings.Join(toStrings(containers(t, named(t, objs, "Deployment", "koord-manager"))[0]["args"]), " "); !strings.Contains(args, "--metrics-secure=true") {
		t.Errorf("koord-manager args %s do not serve metrics securely", args)
	}
}

// ACK's migration keeps the configuration as kube-system/ack-slo-config:
// koord-manager is pointed at it, may read it and keep its last good copy
// beside it, and the chart does not create or overwrite it.
func TestExistingSLOConfig(t *testing.T) {
	objs := render(t, "--set", "manager.sloConfig.name=ack-slo-config,manager.sloConfig.namespace=kube-system,manager.sloConfig.create=false")
	for _, cm := range byKind(objs, "ConfigMap") {
		if strings.Contains(cm.GetName(), "slo") {
			t.Errorf("the chart must not create %s/%s", cm.GetNamespace(), cm.GetName())
		}
	}
	var args []string
	for _, c := range containers(t, named(t, objs, "Deployment", "koord-manager")) {
		args = append(args, toStrings(c["args"])...)
	}
	for _, want := range []string{"--slo-config-name=ack-slo-config", "--config-namespace=kube-system"} {
		if !slices.Contains(args, want) {
			t.Errorf("koord-manager args %v lack %s", args, want)
		}
	}
	role := named(t, objs, "Role", "koord-manager-config")
	if role.GetNamespace() != "kube-system" || !strings.Contains(fmt.Sprint(role.Object["rules"]), "ack-slo-config-last-good") {
		t.Errorf("Role koord-manager-config: %v", role.Object)
	}
	if rb := named(t, objs, "RoleBinding", "koord-manager-config"); rb.GetNamespace() != "kube-system" {
		t.Errorf("RoleBinding koord-manager-config in %s", rb.GetNamespace())
	}
}

// Koordinator's own values file for v1.8 (test/compat/testdata) installs
// Koord: its namespace, log levels, ports, placement and feature keys are
// taken; its image references, which name Koordinator's images, are not.
func TestKoordinatorValues(t *testing.T) {
	values := filepath.Join(chartDir(t), "..", "..", "..", "test", "compat", "testdata", "koordinator-v1.8.0-values.yaml")
	helm(t, "lint", chartDir(t), "-f", values)
	// Koordinator's imagePullSecrets is a map ({}); a list of names replaces it.
	secrets := filepath.Join(t.TempDir(), "secrets.yaml")
	if err := os.WriteFile(secrets, []byte("imagePullSecrets: [regcred]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := render(t, "-f", values, "-f", secrets, "--set", "imageTag=dev",
		"--set", "koordlet.features=CPUBurst=false", "--set", "manager.nodeSelector.pool=system")
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" && ns != "koordinator-system" && ns != "kube-system" {
			t.Errorf("%s %s in namespace %s, want installation.namespace koordinator-system", o.GetKind(), o.GetName(), ns)
		}
	}
	for _, tc := range []struct {
		kind, name, image string
		args              []string
	}{
		{"DaemonSet", "koordlet", "registry.cn-beijing.aliyuncs.com/koord/koordlet:dev", []string{"--v=4", "--metrics-addr=:9316", "--feature-gates=CPUBurst=false"}},
		{"Deployment", "koord-manager", "registry.cn-beijing.aliyuncs.com/koord/koord-manager:dev", []string{"--v=4", "--metrics-addr=:8080", "--health-addr=:8000", "--config-namespace=koordinator-system"}},
		{"Deployment", "koord-scheduler", "registry.cn-beijing.aliyuncs.com/koord/koord-scheduler:dev", []string{"--v=4"}},
	} {
		o := named(t, objs, tc.kind, tc.name)
		c := containers(t, o)[0]
		if c["image"] != tc.image {
			t.Errorf("%s image %v, want %s (Koordinator's repository names its own image, not Koord's)", tc.name, c["image"], tc.image)
		}
		args := toStrings(c["args"])
		for _, want := range tc.args {
			if !slices.Contains(args, want) {
				t.Errorf("%s args %v lack %s", tc.name, args, want)
			}
		}
		secrets, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "imagePullSecrets")
		if fmt.Sprint(secrets) != "[map[name:regcred]]" {
			t.Errorf("%s imagePullSecrets %v", tc.name, secrets)
		}
	}
	sel, _, _ := unstructured.NestedStringMap(named(t, objs, "Deployment", "koord-manager").Object, "spec", "template", "spec", "nodeSelector")
	if sel["pool"] != "system" {
		t.Errorf("manager.nodeSelector not applied: %v", sel)
	}
}

// The webhooks are safe by default: failurePolicy Ignore, a 10 s timeout,
// kube-system and Koord's namespace never intercepted, only the
// slo-controller-config ConfigMap sent; Koordinator's webhookConfiguration
// keys set them; they can be turned off, or their certificate left to
// cert-manager.
func TestWebhooks(t *testing.T) {
	objs := render(t)
	svc := named(t, objs, "Service", "koord-webhook-service")
	if sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector"); sel["app.kubernetes.io/name"] != "koord-manager" {
		t.Errorf("webhook Service selects %v", sel)
	}
	mwc := named(t, objs, "MutatingWebhookConfiguration", "koord-mutating-webhook-configuration")
	vwc := named(t, objs, "ValidatingWebhookConfiguration", "koord-validating-webhook-configuration")
	webhooks := func(o *unstructured.Unstructured) []map[string]any {
		ws, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		var out []map[string]any
		for _, w := range ws {
			out = append(out, w.(map[string]any))
		}
		return out
	}
	all := append(webhooks(mwc), webhooks(vwc)...)
	if len(all) != 6 {
		t.Fatalf("%d webhooks, want the pod mutating one and five validating ones", len(all))
	}
	for _, w := range all {
		if w["failurePolicy"] != "Ignore" || fmt.Sprint(w["timeoutSeconds"]) != "10" || w["sideEffects"] != "None" {
			t.Errorf("webhook %v: failurePolicy %v timeoutSeconds %v sideEffects %v", w["name"], w["failurePolicy"], w["timeoutSeconds"], w["sideEffects"])
		}
		sel := fmt.Sprint(w["namespaceSelector"])
		switch w["name"] {
		case "mpod-create.koordinator.sh", "vpod.koordinator.sh":
			if !strings.Contains(sel, "NotIn") || !strings.Contains(sel, "kube-system koord-system") {
				t.Errorf("webhook %v intercepts kube-system or koord-system: %s", w["name"], sel)
			}
		case "vconfigmap.koordinator.sh":
			if !strings.Contains(fmt.Sprint(w["matchConditions"]), "object.metadata.name == 'slo-controller-config'") || !strings.Contains(sel, "koord-system") {
				t.Errorf("the ConfigMap webhook is sent more than slo-controller-config: %s %v", sel, w["matchConditions"])
			}
		}
	}
	args := toStrings(containers(t, named(t, objs, "Deployment", "koord-manager"))[0]["args"])
	for _, want := range []string{"--webhook-port=9876", "--webhook-cert-source=self"} {
		if !slices.Contains(args, want) {
			t.Errorf("koord-manager args %v lack %s", args, want)
		}
	}

	// Koordinator's keys.
	objs = render(t, "--set", "webhookConfiguration.failurePolicy.pods=Fail,webhookConfiguration.timeoutSeconds=30,manager.webhook.port=9443")
	w := webhooks(named(t, objs, "MutatingWebhookConfiguration", "koord-mutating-webhook-configuration"))[0]
	if w["failurePolicy"] != "Fail" || fmt.Sprint(w["timeoutSeconds"]) != "30" {
		t.Errorf("webhookConfiguration not applied: %v %v", w["failurePolicy"], w["timeoutSeconds"])
	}
	if args := toStrings(containers(t, named(t, objs, "Deployment", "koord-manager"))[0]["args"]); !slices.Contains(args, "--webhook-port=9443") {
		t.Errorf("manager.webhook.port not applied: %v", args)
	}

	// cert-manager issues the certificate and injects the CA bundle.
	objs = render(t, "--set", "manager.webhook.certManager=true")
	cert := named(t, objs, "Certificate", "koord-webhook-cert")
	if s, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName"); s != "koord-webhook-certs" {
		t.Errorf("Certificate writes %s", s)
	}
	if a := named(t, objs, "ValidatingWebhookConfiguration", "koord-validating-webhook-configuration").GetAnnotations(); a["cert-manager.io/inject-ca-from"] != "koord-system/koord-webhook-cert" {
		t.Errorf("annotations %v", a)
	}
	if args := toStrings(containers(t, named(t, objs, "Deployment", "koord-manager"))[0]["args"]); !slices.Contains(args, "--webhook-cert-source=secret") {
		t.Errorf("args %v", args)
	}

	// Off.
	objs = render(t, "--set", "manager.webhook.enabled=false")
	if n := len(byKind(objs, "MutatingWebhookConfiguration")) + len(byKind(objs, "ValidatingWebhookConfiguration")); n != 0 {
		t.Errorf("%d webhook configurations with the webhooks off", n)
	}
	if args := toStrings(containers(t, named(t, objs, "Deployment", "koord-manager"))[0]["args"]); !slices.Contains(args, "--webhook-port=0") {
		t.Errorf("args %v", args)
	}
}

// koord-descheduler's ConfigMap holds a configuration koord-descheduler
// loads (the same loader the binary runs), LowNodeLoad off unless asked, its
// own namespace never evicted from; the toggle removes it all.
func TestDescheduler(t *testing.T) {
	load := func(objs []*unstructured.Unstructured) *v1alpha2.Config {
		t.Helper()
		cm := named(t, objs, "ConfigMap", "koord-descheduler-config")
		data, _, _ := unstructured.NestedString(cm.Object, "data", "koord-descheduler-config")
		cfg, err := v1alpha2.Load([]byte(data))
		if err != nil {
			t.Fatalf("the chart's descheduler configuration does not load: %v\n%s", err, data)
		}
		return cfg
	}
	objs := render(t)
	named(t, objs, "Deployment", "koord-descheduler")
	if cfg := load(objs); cfg.Run[0].LowNodeLoad != nil || cfg.DeschedulingInterval.Duration.String() != "2m0s" {
		t.Errorf("default: LowNodeLoad %v interval %v, want off and 2m", cfg.Run[0].LowNodeLoad, cfg.DeschedulingInterval)
	}
	cfg := load(render(t, "--set", "descheduler.lowNodeLoad.enabled=true,descheduler.dryRun=true"))
	l := cfg.Run[0].LowNodeLoad
	if l == nil || l.HighThresholds["cpu"] != 75 || !slices.Contains(l.EvictableNamespaces.Exclude, "koord-system") || !cfg.DryRun ||
		!slices.Contains(cfg.Run[0].MigrationController.Namespaces.Exclude, "koord-system") {
		t.Errorf("lowNodeLoad.enabled: %+v dryRun %v", l, cfg.DryRun)
	}
	// Koordinator's values file (descheduler.* keys) installs it too.
	values := filepath.Join(chartDir(t), "..", "..", "..", "test", "compat", "testdata", "koordinator-v1.8.0-values.yaml")
	objs = render(t, "-f", values)
	load(objs)
	if c := containers(t, named(t, objs, "Deployment", "koord-descheduler"))[0]; !slices.Contains(toStrings(c["args"]), "--v=4") {
		t.Errorf("descheduler.log.level not applied: %v", c["args"])
	}
	if n := len(byKind(render(t, "--set", "descheduler.enabled=false"), "Deployment")); n != 2 {
		t.Errorf("%d Deployments with the descheduler off, want koord-scheduler and koord-manager", n)
	}
}
