// Package cleanup removes what koordlet leaves in the cluster when Koord is
// uninstalled: the numa-info ConfigMaps are owned by their Nodes, so nothing
// else would delete them while the nodes live. The chart's pre-delete hook
// runs it (koord-manager --cleanup-numa-info).
package cleanup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/koord-project/koord/apis/extension"
)

// NUMAInfo deletes every kube-system/*-numa-info ConfigMap that koordlet
// manages (by label), and only those: a ConfigMap of the same name that
// something else wrote is left alone. It returns how many it deleted.
func NUMAInfo(ctx context.Context, c kubernetes.Interface) (int, error) {
	cms := c.CoreV1().ConfigMaps(extension.NUMAInfoNamespace)
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: extension.LabelManagedBy + "=" + extension.ManagedByKoordlet})
	if err != nil {
		return 0, fmt.Errorf("listing numa-info ConfigMaps: %w", err)
	}
	var errs []error
	n := 0
	for _, cm := range list.Items {
		if !strings.HasSuffix(cm.Name, extension.NUMAInfoSuffix) {
			continue
		}
		err := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}})
		switch {
		case err == nil:
			n++
			klog.FromContext(ctx).Info("deleted", "configmap", extension.NUMAInfoNamespace+"/"+cm.Name)
		case !apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("deleting configmap %s/%s: %w", extension.NUMAInfoNamespace, cm.Name, err))
		}
	}
	return n, errors.Join(errs...)
}

// StopKoordlet deletes the koordlet DaemonSet and waits until its pods are
// gone: a running koordlet re-creates its ConfigMap the moment it is deleted,
// so uninstalling must stop the agents before NUMAInfo runs.
func StopKoordlet(ctx context.Context, c kubernetes.Interface, namespace, name string) error {
	ds, err := c.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading daemonset %s/%s: %w", namespace, name, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return fmt.Errorf("daemonset %s/%s selector: %w", namespace, name, err)
	}
	fg := metav1.DeletePropagationForeground
	err = c.AppsV1().DaemonSets(namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting daemonset %s/%s: %w", namespace, name, err)
	}
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return false, nil
		}
		return len(pods.Items) == 0, nil
	})
}
