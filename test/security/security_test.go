// Package security attacks Koord's trust boundaries on an in-process control
// plane (etcd + kube-apiserver with Node,RBAC authorization) that runs the
// shipped RBAC and admission policies: each attack with a tenant's identity,
// or a koordlet's token for another node, is refused naming the rule, and
// the objects stay as they were. See docs/security.md.
package security

import (
	"context"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/manifests"
	koordclientset "github.com/koord-project/koord/pkg/client/clientset/versioned"
	"github.com/koord-project/koord/pkg/client/koordclient"
	"github.com/koord-project/koord/pkg/reservationutil"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// cluster is a control plane with Koord's RBAC and policies installed, nodes
// n1 and n2, and a tenant who may create and change pods in namespace tenant.
type cluster struct {
	*controlplane.ControlPlane
	tenant kubernetes.Interface
}

func start(t *testing.T, ctx context.Context) *cluster {
	t.Helper()
	cp, err := controlplane.Start(controlplane.Options{RBAC: true})
	if err != nil {
		t.Fatalf("control plane: %v", err)
	}
	t.Cleanup(cp.Stop)
	for _, ns := range []string{"koord-system", "tenant"} {
		if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, set := range []fs.FS{manifests.RBAC, manifests.Policies} {
		files, err := fs.Glob(set, "*/*.yaml")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := fs.ReadFile(set, f)
			if err != nil {
				t.Fatal(err)
			}
			if err := cp.Apply(ctx, data); err != nil {
				t.Fatalf("applying %s: %v", f, err)
			}
		}
	}
	for _, n := range []string{"n1", "n2"} {
		if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: n, CPU: "8", Memory: "16Gi"}); err != nil {
			t.Fatal(err)
		}
		if err := cp.CreateNodeMetric(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	// The tenant: edit rights on pods in its namespace, nothing else.
	if _, err := cp.Client.CoreV1().ServiceAccounts("tenant").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "dev"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "pods"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}}}}
	if _, err := cp.Client.RbacV1().Roles("tenant").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "pods"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pods"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "tenant", Name: "dev"}}}
	if _, err := cp.Client.RbacV1().RoleBindings("tenant").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Reservations are cluster-scoped: a tenant who may make them has a ClusterRole.
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "tenant-reservations"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"scheduling.koordinator.sh"}, Resources: []string{"reservations"}, Verbs: []string{"get", "create", "update", "patch"}}}}
	if _, err := cp.Client.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant-reservations"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "tenant-reservations"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "tenant", Name: "dev"}}}
	if _, err := cp.Client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := &cluster{ControlPlane: cp, tenant: kubernetes.NewForConfigOrDie(c0(cp, token(t, ctx, cp, "tenant", "dev", nil)))}
	// Policies take effect once the API server has compiled them.
	forged := tenantPod("probe", map[string]string{extension.AnnotationResourceStatus: `{"cpuset":"1"}`})
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.tenant.CoreV1().Pods("tenant").Create(ctx, forged, metav1.CreateOptions{})
		if err == nil {
			_ = cp.Client.CoreV1().Pods("tenant").Delete(ctx, forged.Name, metav1.DeleteOptions{})
		}
		// The policy's refusal, not RBAC's (its cache may lag the binding).
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), nil
	})
	if err != nil {
		t.Fatalf("the admission policies never took effect: %v", err)
	}
	return c
}

// token is a ServiceAccount token, bound to pod when given (a pod's own
// token carries its node, as the kubelet-mounted one does).
func token(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, ns, sa string, pod *corev1.Pod) string {
	t.Helper()
	req := &authenticationv1.TokenRequest{}
	if pod != nil {
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tok, err := cp.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", ns, sa, err)
	}
	return tok.Status.Token
}

func c0(cp *controlplane.ControlPlane, bearer string) *rest.Config {
	return &rest.Config{Host: cp.Config.Host, BearerToken: bearer, TLSClientConfig: rest.TLSClientConfig{
		CAData: cp.Config.CAData, ServerName: cp.Config.ServerName, Insecure: cp.Config.Insecure}}
}

// koordletOn is a koordlet's identity on node: the token of its pod there.
func koordletOn(t *testing.T, ctx context.Context, c *cluster, node string) (kubernetes.Interface, koordclientset.Interface) {
	t.Helper()
	pod, err := controlplane.MakePod(controlplane.PodSpec{Namespace: "koord-system", Name: "koordlet-" + node})
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.NodeName, pod.Spec.ServiceAccountName = node, "koordlet"
	if pod, err = c.Client.CoreV1().Pods("koord-system").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := c0(c.ControlPlane, token(t, ctx, c.ControlPlane, "koord-system", "koordlet", pod))
	koord, err := koordclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg), koord
}

func tenantPod(name string, annotations map[string]string) *corev1.Pod {
	pod, _ := controlplane.MakePod(controlplane.PodSpec{Namespace: "tenant", Name: name, CPU: "1", Memory: "1Gi", SchedulerName: "koord-scheduler", Annotations: annotations})
	return pod
}

// refused fails unless err is the policy's refusal containing want.
func refused(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil || !(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v, want refused with %q", what, err, want)
	}
}

// A tenant forges the scheduler's records on its own pods: the CPUs an LSE
// pod holds (and kubelet's reserved CPU 0) through resource-status, another
// tenant's reservation through reservation-allocated, a placeholder that
// would make koord-scheduler turn a reservation Available where the tenant
// likes. Every one is refused at admission, at create and at update.
func TestTenantCannotForgeSchedulingAnnotations(t *testing.T) {
	ctx := testContext(t)
	c := start(t, ctx)
	pods := c.tenant.CoreV1().Pods("tenant")
	for key, value := range map[string]string{
		extension.AnnotationResourceStatus:       `{"cpuset":"0-7"}`,
		extension.AnnotationReservationAllocated: `{"name":"someone-elses","uid":"x"}`,
	} {
		_, err := pods.Create(ctx, tenantPod("forged", map[string]string{key: value}), metav1.CreateOptions{})
		refused(t, "creating a pod with "+key, err, "only koord-scheduler may set or change annotation "+key)
	}
	pod := tenantPod("placeholder", map[string]string{reservationutil.PlaceholderAnnotation: "r1"})
	_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	refused(t, "creating a placeholder", err, "only koord-manager may create a pod with annotation "+reservationutil.PlaceholderAnnotation)

	// A pod set straight onto a node with a cpuset claim: refused too.
	pinned := tenantPod("pinned", map[string]string{extension.AnnotationResourceStatus: `{"cpuset":"0-16383"}`})
	pinned.Spec.NodeName = "n1"
	_, err = pods.Create(ctx, pinned, metav1.CreateOptions{})
	refused(t, "creating a pod on n1 claiming every CPU", err, "only koord-scheduler may set or change annotation")

	// An honest pod gains the annotation later: refused, and it stays without.
	honest, err := pods.Create(ctx, tenantPod("honest", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("an ordinary pod is refused: %v", err)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{extension.AnnotationResourceStatus: `{"cpuset":"2-3"}`}}})
	_, err = pods.Patch(ctx, honest.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	refused(t, "adding resource-status to a running pod", err, "only koord-scheduler may set or change annotation "+extension.AnnotationResourceStatus)
	if got, _ := c.Client.CoreV1().Pods("tenant").Get(ctx, honest.Name, metav1.GetOptions{}); got == nil || got.Annotations[extension.AnnotationResourceStatus] != "" {
		t.Errorf("the pod changed: %v", got.Annotations)
	}
	list, _ := c.Client.CoreV1().Pods("tenant").List(ctx, metav1.ListOptions{})
	if len(list.Items) != 1 {
		t.Errorf("tenant namespace holds %d pods, want only the honest one", len(list.Items))
	}

	// A Reservation claiming CPUs (its resource-status keeps them off the
	// shared pool on its node) is refused too; without it, it is accepted.
	tenantKoord, err := koordclient.New(c0(c.ControlPlane, token(t, ctx, c.ControlPlane, "tenant", "dev", nil)))
	if err != nil {
		t.Fatal(err)
	}
	r := &schedulingv1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: "mine", Annotations: map[string]string{extension.AnnotationResourceStatus: `{"cpuset":"0-7"}`}},
		Spec: schedulingv1alpha1.ReservationSpec{
			Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}},
			Owners:   []schedulingv1alpha1.ReservationOwner{{Object: &corev1.ObjectReference{Namespace: "tenant", Name: "x"}}},
		}}
	_, err = tenantKoord.SchedulingV1alpha1().Reservations().Create(ctx, r, metav1.CreateOptions{})
	refused(t, "creating a Reservation with resource-status", err, "only koord-scheduler may set or change annotation "+extension.AnnotationResourceStatus)
	r.Annotations = nil
	if _, err := tenantKoord.SchedulingV1alpha1().Reservations().Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Errorf("an ordinary Reservation is refused: %v", err)
	}

	// koord-scheduler itself may: it is what records the CPUs it chose.
	sched := kubernetes.NewForConfigOrDie(c0(c.ControlPlane, token(t, ctx, c.ControlPlane, "koord-system", "koord-scheduler", nil)))
	if _, err := sched.CoreV1().Pods("tenant").Patch(ctx, honest.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("koord-scheduler writing resource-status: %v", err)
	}
	// And no one binds a reservation's placeholder, koord-scheduler included.
	placeholder, err := controlplane.MakePod(controlplane.PodSpec{Namespace: "koord-system", Name: "reservation-r1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Pods("koord-system").Create(ctx, placeholder, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = sched.CoreV1().Pods("koord-system").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "koord-system", Name: "reservation-r1"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{})
	refused(t, "binding a placeholder", err, "is never bound")
}

// A koordlet writes its own node's numa-info, NodeMetric status and nothing
// of any other node's, nor any other ConfigMap in kube-system; a token that
// is not a pod's on a node writes nothing.
func TestKoordletWritesOnlyItsOwnNode(t *testing.T) {
	ctx := testContext(t)
	c := start(t, ctx)
	client, koord := koordletOn(t, ctx, c, "n1")
	info := topologytest.Linux(1, 1, 2, 2, 8<<30)
	cms := client.CoreV1().ConfigMaps(extension.NUMAInfoNamespace)
	own, err := extension.NewNUMAInfoConfigMap("n1", info)
	if err != nil {
		t.Fatal(err)
	}
	n1, err := c.Client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	own.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: n1.UID}}
	if _, err := cms.Create(ctx, own, metav1.CreateOptions{}); err != nil {
		t.Fatalf("koordlet of n1 publishing its numa-info: %v", err)
	}
	other, _ := extension.NewNUMAInfoConfigMap("n2", info)
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n2", UID: "uid-n2"}}
	_, err = cms.Create(ctx, other, metav1.CreateOptions{})
	refused(t, "koordlet of n1 writing n2's numa-info", err, "koordlet of node n1 may write only configmaps n1-numa-info")
	coredns := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns"}, Data: map[string]string{"Corefile": ". { forward . 6.6.6.6 }"}}
	_, err = cms.Create(ctx, coredns, metav1.CreateOptions{})
	refused(t, "koordlet writing coredns", err, "may write only configmaps n1-numa-info")

	// NodeMetric status: its own, yes; n2's (100 % usage to send pods away), no.
	report := func(node string) error {
		nm, err := koord.SloV1alpha1().NodeMetrics().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		nm.Status.UpdateTime = &now
		nm.Status.NodeMetric = &slov1alpha1.NodeMetricInfo{NodeUsage: slov1alpha1.ResourceMap{ResourceList: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}}
		_, err = koord.SloV1alpha1().NodeMetrics().UpdateStatus(ctx, nm, metav1.UpdateOptions{})
		return err
	}
	if err := report("n1"); err != nil {
		t.Errorf("koordlet of n1 reporting its NodeMetric: %v", err)
	}
	refused(t, "koordlet of n1 reporting n2's usage", report("n2"), "koordlet of node n1 may write only nodemetrics n1")
	if nm, _ := c.Koord.SloV1alpha1().NodeMetrics().Get(ctx, "n2", metav1.GetOptions{}); nm == nil || nm.Status.NodeMetric != nil {
		t.Errorf("n2's NodeMetric changed: %+v", nm)
	}

	// A koordlet token not bound to a pod carries no node: it writes nothing.
	unbound := kubernetes.NewForConfigOrDie(c0(c.ControlPlane, token(t, ctx, c.ControlPlane, "koord-system", "koordlet", nil)))
	own.ResourceVersion = ""
	_, err = unbound.CoreV1().ConfigMaps(extension.NUMAInfoNamespace).Update(ctx, own, metav1.UpdateOptions{})
	refused(t, "an unbound koordlet token", err, "not bound to a pod on a node")
}

// koord-manager publishes batch resources on Nodes, and nothing else there:
// not a larger cpu, not a condition.
func TestManagerWritesOnlyBatchResources(t *testing.T) {
	ctx := testContext(t)
	c := start(t, ctx)
	mgr := kubernetes.NewForConfigOrDie(c0(c.ControlPlane, token(t, ctx, c.ControlPlane, "koord-system", "koord-manager", nil)))
	patchStatus := func(status map[string]any) error {
		patch, _ := json.Marshal(map[string]any{"status": status})
		_, err := mgr.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	}
	batch := map[string]string{string(extension.BatchCPU): "3000"}
	if err := patchStatus(map[string]any{"capacity": batch, "allocatable": batch}); err != nil {
		t.Fatalf("koord-manager publishing batch-cpu: %v", err)
	}
	refused(t, "koord-manager raising cpu", patchStatus(map[string]any{"allocatable": map[string]string{"cpu": "64"}}),
		"may change only kubernetes.io/batch-* and kubernetes.io/mid-*")
	refused(t, "koord-manager marking the node not ready", patchStatus(map[string]any{"conditions": []map[string]string{{"type": "Ready", "status": "False"}}}),
		"may not change a Node's conditions")
	node, err := c.Client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cpu := node.Status.Allocatable[corev1.ResourceCPU]; cpu.Value() != 8 {
		t.Errorf("n1's cpu is now %s", cpu.String())
	}
}

// A tenant whose pod is running cannot relabel it to escape its quota: not
// quota.scheduling.koordinator.sh/preemptible=false (which would shield a
// pod that borrowed from the preemption that gives the capacity back), nor
// another quota name. Before it is placed it may; after, other labels
// still change.
func TestTenantCannotRelabelPlacedPodsQuota(t *testing.T) {
	ctx := testContext(t)
	c := start(t, ctx)
	pods := c.tenant.CoreV1().Pods("tenant")
	label := func(name, key, value string) error {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{key: value}}})
		_, err := pods.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	pod, err := pods.Create(ctx, tenantPod("batch", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := label(pod.Name, extension.LabelQuotaName, "team-a"); err != nil {
		t.Errorf("naming a quota on a pending pod: %v", err)
	}
	if err := c.Client.CoreV1().Pods("tenant").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: pod.Name},
		Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	refused(t, "shielding a running pod from preemption", label(pod.Name, extension.LabelPreemptible, "false"),
		"label "+extension.LabelPreemptible+" of a pod already placed on a node cannot be set or changed")
	refused(t, "moving a running pod to another quota", label(pod.Name, extension.LabelQuotaName, "team-b"),
		"label "+extension.LabelQuotaName+" of a pod already placed on a node cannot be set or changed")
	if err := label(pod.Name, "app", "web"); err != nil {
		t.Errorf("changing another label of a running pod: %v", err)
	}
	got, err := c.Client.CoreV1().Pods("tenant").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[extension.LabelQuotaName] != "team-a" || got.Labels[extension.LabelPreemptible] != "" {
		t.Errorf("the pod's quota labels changed: %v", got.Labels)
	}
}
