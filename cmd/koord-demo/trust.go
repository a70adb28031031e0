package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/manifests"
)

// trustScene installs the shipped admission policies and shows a tenant's
// forged CPU claim refused, a Reservation the CRD cannot decode and a
// quantity bomb refused at write, and a self-placed pod shielding itself
// from preemption refused (docs/security.md).
func trustScene(ctx context.Context, cp *controlplane.ControlPlane) error {
	fmt.Println("\nTrust: the shipped admission policies (manifests/policies) and CRD schemas")
	files, err := fs.Glob(manifests.Policies, "policies/*.yaml")
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := fs.ReadFile(manifests.Policies, f)
		if err != nil {
			return err
		}
		if err := cp.Apply(ctx, data); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	// A tenant: a ServiceAccount's token, not the demo's admin credentials.
	if _, err := cp.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	tok, err := cp.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "tenant", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	tenant, err := kubernetes.NewForConfig(&rest.Config{Host: cp.Config.Host, BearerToken: tok.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.Config.CAData, ServerName: cp.Config.ServerName, Insecure: cp.Config.Insecure}})
	if err != nil {
		return err
	}
	forged, err := controlplane.MakePod(controlplane.PodSpec{Name: "squatter", CPU: "4", Memory: "1Gi", SchedulerName: "koord-scheduler",
		Annotations: map[string]string{extension.AnnotationResourceStatus: `{"cpuset":"0-3"}`}})
	if err != nil {
		return err
	}
	forged.Spec.NodeName = "node-a"
	var refusal error
	// The API server compiles new policies in the background.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, refusal = tenant.CoreV1().Pods("default").Create(ctx, forged, metav1.CreateOptions{})
		if refusal == nil {
			_ = cp.Client.CoreV1().Pods("default").Delete(ctx, forged.Name, metav1.DeleteOptions{})
		}
		return apierrors.IsForbidden(refusal), nil
	})
	if err != nil {
		return fmt.Errorf("a tenant's forged resource-status was not refused: %v", refusal)
	}
	fmt.Printf("  tenant pod on node-a claiming CPUs 0-3 (resource-status): refused: %s\n", afterLast(refusal.Error(), "denied request: "))
	banana := `{"apiVersion":"scheduling.koordinator.sh/v1alpha1","kind":"Reservation","metadata":{"name":"banana"},
"spec":{"ttl":"banana","owners":[{"object":{"name":"x"}}],"template":{"spec":{"containers":[{"name":"c","image":"pause"}]}}}}`
	err = cp.Koord.SchedulingV1alpha1().RESTClient().Post().Resource("reservations").Body([]byte(banana)).Do(ctx).Error()
	if err == nil {
		return errors.New("a Reservation with ttl banana was accepted")
	}
	fmt.Printf("  Reservation with ttl: banana: refused: %s\n", afterLast(err.Error(), "is invalid: "))
	// A quantity whose parse would cost every component's watch a second.
	bomb := `{"status":{"nodeMetric":{"nodeUsage":{"resources":{"cpu":"1e-9999999"}}}}}`
	err = cp.Koord.SloV1alpha1().RESTClient().Patch(types.MergePatchType).Resource("nodemetrics").Name("node-a").SubResource("status").Body([]byte(bomb)).Do(ctx).Error()
	if err == nil {
		return errors.New("a NodeMetric with cpu 1e-9999999 was accepted")
	}
	fmt.Printf("  NodeMetric usage cpu: 1e-9999999: refused: %.110s...\n", afterLast(err.Error(), "is invalid: "))
	// A pod placed by its writer skips the scheduler's quota check.
	placed, err := controlplane.MakePod(controlplane.PodSpec{Name: "shielded", CPU: "1", Memory: "1Gi", SchedulerName: "koord-scheduler",
		Labels: map[string]string{extension.LabelPreemptible: "false"}})
	if err != nil {
		return err
	}
	placed.Spec.NodeName = "node-a"
	if _, err = tenant.CoreV1().Pods("default").Create(ctx, placed, metav1.CreateOptions{}); err == nil {
		return errors.New("a self-placed pod labelled preemptible=false was accepted")
	}
	fmt.Printf("  tenant pod created on node-a with %s=false: refused: %.120s...\n", extension.LabelPreemptible, afterLast(err.Error(), "denied request: "))
	return nil
}

func afterLast(s, sep string) string {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[i+len(sep):]
	}
	return s
}
