package controlplane

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	sloconfig "github.com/koord-project/koord/pkg/slo/config"
	"github.com/koord-project/koord/pkg/slo/nodemetric"
)

// NodeSpec describes a simulated node: no kubelet runs it, so it is created
// Ready with the given capacity.
type NodeSpec struct {
	Name        string
	CPU         string // e.g. "4"
	Memory      string // e.g. "32Gi"
	Pods        string // e.g. "110"
	Labels      map[string]string
	Annotations map[string]string
}

// CreateNode creates a Ready node with capacity = allocatable = spec.
func (cp *ControlPlane) CreateNode(ctx context.Context, spec NodeSpec) (*corev1.Node, error) {
	if spec.Pods == "" {
		spec.Pods = "110"
	}
	res := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: spec.CPU, corev1.ResourceMemory: spec.Memory, corev1.ResourcePods: spec.Pods} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("node %s %s %q: %w", spec.Name, name, v, err)
		}
		res[name] = q
	}
	labels := map[string]string{corev1.LabelHostname: spec.Name}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Labels: labels, Annotations: spec.Annotations},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res,
			Phase:       corev1.NodeRunning,
		},
	}
	created, err := cp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	// Status is a subresource: the create above drops it. A running
	// koord-manager may write the node's status meanwhile (its batch
	// resources): on a conflict, again over the newer object.
	var out *corev1.Node
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		created.Status.Capacity, created.Status.Allocatable = node.Status.Capacity.DeepCopy(), node.Status.Allocatable.DeepCopy()
		created.Status.Phase = node.Status.Phase
		created.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}
		var err error
		if out, err = cp.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); apierrors.IsConflict(err) {
			if latest, getErr := cp.Client.CoreV1().Nodes().Get(ctx, created.Name, metav1.GetOptions{}); getErr == nil {
				created = latest
			}
		}
		return err
	})
	return out, err
}

// PodSpec describes a single-container pod.
type PodSpec struct {
	Namespace, Name string
	SchedulerName   string
	CPU, Memory     string // requests; empty for none
	// Guaranteed sets limits equal to requests.
	Guaranteed  bool
	Labels      map[string]string
	Annotations map[string]string
	// PriorityClassName is resolved by the API server's Priority admission.
	PriorityClassName string
}

// MakePod builds the pod object for spec.
func MakePod(spec PodSpec) (*corev1.Pod, error) {
	if spec.Namespace == "" {
		spec.Namespace = metav1.NamespaceDefault
	}
	req := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: spec.CPU, corev1.ResourceMemory: spec.Memory} {
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("pod %s %s %q: %w", spec.Name, name, v, err)
		}
		req[name] = q
	}
	c := corev1.Container{Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: req}}
	if spec.Guaranteed {
		c.Resources.Limits = req.DeepCopy()
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: spec.Namespace, Name: spec.Name, Labels: spec.Labels, Annotations: spec.Annotations},
		Spec: corev1.PodSpec{
			SchedulerName:     spec.SchedulerName,
			Containers:        []corev1.Container{c},
			PriorityClassName: spec.PriorityClassName,
		},
	}, nil
}

// CreatePod creates the pod for spec.
func (cp *ControlPlane) CreatePod(ctx context.Context, spec PodSpec) (*corev1.Pod, error) {
	pod, err := MakePod(spec)
	if err != nil {
		return nil, err
	}
	return cp.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
}

// WaitForPodBound waits until the pod has a node and returns it.
func (cp *ControlPlane) WaitForPodBound(ctx context.Context, namespace, name string, timeout time.Duration) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pod = p
		return p.Spec.NodeName != "", nil
	})
	if err != nil {
		return pod, fmt.Errorf("pod %s/%s not bound within %s: %w", namespace, name, timeout, err)
	}
	return pod, nil
}

// PodUnschedulableMessage returns the PodScheduled=False message the scheduler
// wrote for a pod, or "" while it has written none.
func PodUnschedulableMessage(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}

// WaitForDecisions waits until the scheduler has decided on every one of its
// pods: each is bound or marked unschedulable with a reason.
func (cp *ControlPlane) WaitForDecisions(ctx context.Context, schedulerName string, timeout time.Duration) error {
	var undecided []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := cp.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		undecided = undecided[:0]
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.SchedulerName == schedulerName && p.Spec.NodeName == "" && PodUnschedulableMessage(p) == "" {
				undecided = append(undecided, p.Namespace+"/"+p.Name)
			}
		}
		return len(undecided) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%s has not decided on %v: %w", schedulerName, undecided, err)
	}
	return nil
}

// CreateNodeMetric creates node's NodeMetric as koord-manager does (the only
// creator; koordlet writes the status), for tests that run koordlet without
// koord-manager. One that exists already is left as it is.
func (cp *ControlPlane) CreateNodeMetric(ctx context.Context, node string) error {
	n, err := cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	_, err = cp.Koord.SloV1alpha1().NodeMetrics().Create(ctx, nodemetric.New(n, sloconfig.DefaultColocation()), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// ReportNodeMetric writes a node's NodeMetric as koordlet would (and creates
// the object when missing, as koord-manager would): its status with the node
// usage, the pods' usage and the time of the report.
func (cp *ControlPlane) ReportNodeMetric(ctx context.Context, node string, usage corev1.ResourceList, updated time.Time, pods ...*slov1alpha1.PodMetricInfo) error {
	client := cp.Koord.SloV1alpha1().NodeMetrics()
	// koord-manager, when running, creates and updates the same object:
	// either may get there first.
	return retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		nm, err := client.Get(ctx, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			nm, err = client.Create(ctx, &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
		}
		if err != nil {
			return err
		}
		nm.Status = slov1alpha1.NodeMetricStatus{
			UpdateTime: &metav1.Time{Time: updated},
			NodeMetric: &slov1alpha1.NodeMetricInfo{NodeUsage: slov1alpha1.ResourceMap{ResourceList: usage}},
			PodsMetric: pods,
		}
		_, err = client.UpdateStatus(ctx, nm, metav1.UpdateOptions{})
		return err
	})
}

// PodsByNode counts the bound pods of a scheduler per node.
func (cp *ControlPlane) PodsByNode(ctx context.Context, schedulerName string) (map[string]int, error) {
	pods, err := cp.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, p := range pods.Items {
		if p.Spec.SchedulerName == schedulerName && p.Spec.NodeName != "" {
			counts[p.Spec.NodeName]++
		}
	}
	return counts, nil
}

// PublishNUMAInfo writes a node's kube-system/<node>-numa-info ConfigMap as
// koordlet does: labelled, owned by the Node, created or updated.
func (cp *ControlPlane) PublishNUMAInfo(ctx context.Context, node string, info *extension.NUMAInfo) error {
	cm, err := extension.NewNUMAInfoConfigMap(node, info)
	if err != nil {
		return err
	}
	n, err := cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}
	client := cp.Client.CoreV1().ConfigMaps(cm.Namespace)
	existing, err := client.Get(ctx, cm.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = client.Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	existing.Labels, existing.OwnerReferences, existing.Data = cm.Labels, cm.OwnerReferences, cm.Data
	_, err = client.Update(ctx, existing, metav1.UpdateOptions{})
	return err
}
