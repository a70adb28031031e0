package migration

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
)

// Annotations a running job carries, so that limits count it without
// reading its pod (which may be gone).
const (
	AnnotationSourceNode = "descheduler.koordinator.sh/source-node"
	AnnotationWorkload   = "descheduler.koordinator.sh/workload"
)

// arbitrate says why the job must wait (empty: it may start), and marks a
// job that starts with its pod's node and workload.
func (r *Reconciler) arbitrate(ctx context.Context, job *schedulingv1alpha1.PodMigrationJob, pod *corev1.Pod) string {
	var jobs schedulingv1alpha1.PodMigrationJobList
	if err := r.Client.List(ctx, &jobs); err != nil {
		return "listing PodMigrationJobs: " + err.Error()
	}
	workload := ""
	ctrlRef := metav1.GetControllerOf(pod)
	if ctrlRef != nil {
		workload = string(ctrlRef.UID)
	}
	var running, onNode, inNamespace, ofWorkload, recent int32
	var window time.Duration
	if l, ok := r.Args.ObjectLimiters["workload"]; ok {
		window = l.Duration.Duration
	}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if j.UID == job.UID {
			continue
		}
		if workload != "" && j.Annotations[AnnotationWorkload] == workload && window > 0 && r.now().Sub(j.CreationTimestamp.Time) < window &&
			j.Status.Phase != schedulingv1alpha1.PodMigrationJobFailed && j.Status.Phase != schedulingv1alpha1.PodMigrationJobAborted && j.Status.Phase != schedulingv1alpha1.PodMigrationJobPending && j.Status.Phase != "" {
			recent++
		}
		if j.Status.Phase != schedulingv1alpha1.PodMigrationJobRunning {
			continue
		}
		running++
		if j.Annotations[AnnotationSourceNode] == pod.Spec.NodeName {
			onNode++
		}
		if j.Spec.PodRef != nil && j.Spec.PodRef.Namespace == pod.Namespace {
			inNamespace++
		}
		if workload != "" && j.Annotations[AnnotationWorkload] == workload {
			ofWorkload++
		}
	}
	skip := func(gate string) bool { return slices.Contains(r.Args.SkipEvictionGates, gate) }
	if l := r.Args.MaxMigratingGlobally; l != nil && *l > 0 && !skip("MaxMigratingGlobally") && running >= *l {
		return fmt.Sprintf("maxMigratingGlobally: %d jobs are moving pods", running)
	}
	if l := r.Args.MaxMigratingPerNode; l != nil && *l > 0 && !skip("MaxMigratingPerNode") && onNode >= *l {
		return fmt.Sprintf("maxMigratingPerNode: %d jobs are moving pods off node %s", onNode, pod.Spec.NodeName)
	}
	if l := r.Args.MaxMigratingPerNamespace; l != nil && *l > 0 && !skip("MaxMigratingPerNamespace") && inNamespace >= *l {
		return fmt.Sprintf("maxMigratingPerNamespace: %d jobs are moving pods of namespace %s", inNamespace, pod.Namespace)
	}
	if ctrlRef != nil {
		replicas, known := r.replicas(ctx, pod.Namespace, ctrlRef)
		scaled := func(v *intstr.IntOrString) int32 {
			n, _ := intstr.GetScaledValueFromIntOrPercent(v, int(replicas), true)
			return int32(n)
		}
		if v := r.Args.MaxMigratingPerWorkload; v != nil && !skip("MaxMigratingPerWorkload") {
			limit := scaled(v)
			if ofWorkload >= limit {
				return fmt.Sprintf("maxMigratingPerWorkload: %d of %s %s's pods are moving (limit %d)", ofWorkload, ctrlRef.Kind, ctrlRef.Name, limit)
			}
			if known && !skip("ExpectedReplicas") && !ptr.Deref(r.Args.SkipCheckExpectedReplicas, false) && limit >= replicas {
				return fmt.Sprintf("%s %s has %d replicas, no more than maxMigratingPerWorkload %d: moving one could take it down", ctrlRef.Kind, ctrlRef.Name, replicas, limit)
			}
		}
		if v := r.Args.MaxUnavailablePerWorkload; v != nil && !skip("MaxUnavailablePerWorkload") {
			limit := scaled(v)
			unavailable := ofWorkload + r.notReady(ctx, pod.Namespace, ctrlRef)
			if unavailable >= limit {
				return fmt.Sprintf("maxUnavailablePerWorkload: %d of %s %s's pods are unavailable or moving (limit %d)", unavailable, ctrlRef.Kind, ctrlRef.Name, limit)
			}
			if known && !skip("ExpectedReplicas") && !ptr.Deref(r.Args.SkipCheckExpectedReplicas, false) && limit >= replicas {
				return fmt.Sprintf("%s %s has %d replicas, no more than maxUnavailablePerWorkload %d", ctrlRef.Kind, ctrlRef.Name, replicas, limit)
			}
		}
		if l, ok := r.Args.ObjectLimiters["workload"]; ok && l.Duration.Duration > 0 {
			maxMoves := int32(1)
			if l.MaxMigrating != nil {
				maxMoves = scaled(l.MaxMigrating)
			} else if v := r.Args.MaxMigratingPerWorkload; v != nil {
				maxMoves = scaled(v)
			}
			maxMoves += int32(l.Burst)
			if maxMoves > 0 && recent >= maxMoves {
				return fmt.Sprintf("objectLimiters.workload: %s %s had %d moves in the last %v", ctrlRef.Kind, ctrlRef.Name, recent, l.Duration.Duration)
			}
		}
	}
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations[AnnotationSourceNode] = pod.Spec.NodeName
	if workload != "" {
		job.Annotations[AnnotationWorkload] = workload
	}
	if err := r.Client.Update(ctx, job); err != nil {
		return "recording the job's node: " + err.Error()
	}
	return ""
}

// replicas is the workload's desired replicas, when its kind has them.
func (r *Reconciler) replicas(ctx context.Context, ns string, ref *metav1.OwnerReference) (int32, bool) {
	var n *int32
	switch ref.Kind {
	case "ReplicaSet":
		rs, err := r.Kube.AppsV1().ReplicaSets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return 0, false
		}
		n = rs.Spec.Replicas
	case "StatefulSet":
		ss, err := r.Kube.AppsV1().StatefulSets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return 0, false
		}
		n = ss.Spec.Replicas
	case "ReplicationController":
		rc, err := r.Kube.CoreV1().ReplicationControllers(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return 0, false
		}
		n = rc.Spec.Replicas
	default:
		return 0, false
	}
	if n == nil {
		return 1, true
	}
	return *n, true
}

// notReady counts the workload's pods that are not Ready.
func (r *Reconciler) notReady(ctx context.Context, ns string, ref *metav1.OwnerReference) int32 {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return 0
	}
	var n int32
	for i := range pods.Items {
		p := &pods.Items[i]
		c := metav1.GetControllerOf(p)
		if c == nil || c.UID != ref.UID || p.DeletionTimestamp != nil {
			continue
		}
		ready := false
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			n++
		}
	}
	return n
}
