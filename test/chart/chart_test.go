// Package chart tests the Helm chart deploy/charts/koord by rendering it
// with the helm binary `make helm` builds ($HELM) and reading what comes out.
package chart

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
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
	if got := names(byKind(objs, "CustomResourceDefinition")); got != "reservations.scheduling.koordinator.sh,nodemetrics.slo.koordinator.sh,nodeslos.slo.koordinator.sh" {
		t.Errorf("CRDs %s", got)
	}
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
	sched := byKind(objs, "Deployment")[0]
	if r, _, _ := unstructured.NestedFieldNoCopy(sched.Object, "spec", "replicas"); r != float64(2) {
		t.Errorf("koord-scheduler replicas %v, want 2 (leader election)", r)
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
	if got := names(byKind(render(t, "--set", "crds.nodeslos=false,crds.noderesourcetopologies=true"), "CustomResourceDefinition")); got !=
		"reservations.scheduling.koordinator.sh,nodemetrics.slo.koordinator.sh,noderesourcetopologies.topology.node.k8s.io" {
		t.Errorf("toggled CRDs %s", got)
	}
}

func TestValues(t *testing.T) {
	objs := render(t, "--set", `featureGates=A=true\,B=true`, "--set", "imageRepositoryHost=registry.example.com",
		"--set", "scheduler.hostNetwork=true", "--namespace", "custom")
	sched := byKind(objs, "Deployment")[0]
	c := containers(t, sched)[0]
	if !strings.Contains(strings.Join(toStrings(c["args"]), " "), "--feature-gates=A=true,B=true") {
		t.Errorf("scheduler args %v lack the feature gates", c["args"])
	}
	for _, kind := range []string{"Deployment", "DaemonSet"} {
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
