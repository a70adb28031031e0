// Package reservation is koord-manager's Reservation lifecycle controller.
// A Pending reservation gets a placeholder pod, which koord-scheduler places
// through its whole profile and turns into an Available reservation on the
// chosen node (pkg/plugins/reservation); from then on the controller keeps
// the status derived from the pods that consume it, ends it (consumed under
// allocateOnce, expired, node gone) and garbage-collects it.
package reservationlifecycle

import (
	"github.com/koord-project/koord/pkg/compat"

	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/pkg/reservationutil"
	"github.com/koord-project/koord/pkg/slo/index"
)

// Name is the controller's name in logs and metrics.
const Name = "reservation"

// ReservationNodeName indexes reservations by status.nodeName.
const ReservationNodeName = "status.nodeName"

// SchedulerName is who schedules placeholders.
const SchedulerName = "koord-scheduler"

// Reconciler runs the lifecycle of every Reservation.
type Reconciler struct {
	Client client.Client
	// Live reads the API server directly (not the cache), to confirm a
	// reservation is still Pending before creating a placeholder for it: the
	// scheduler deletes the placeholder right after making it Available, and
	// a cache that has not seen that yet must not have it placed twice.
	Live client.Reader
	// Namespace holds the placeholder pods (koord-manager's own).
	Namespace string
	// GCAfter is how long a Succeeded or Failed reservation is kept.
	GCAfter time.Duration
	Now     func() time.Time
	// Reporter, when set, reports Reservation fields Koord does not act on.
	Reporter *compat.Reporter
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := klog.FromContext(ctx)
	var res schedulingv1alpha1.Reservation
	if err := r.Client.Get(ctx, req.NamespacedName, &res); err != nil {
		// A deleted reservation's placeholder goes with it (owner reference).
		if apierrors.IsNotFound(err) && r.Reporter != nil {
			r.Reporter.Forget(compat.Reservation, req.Namespace, req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if r.Reporter != nil {
		r.Reporter.NotActedOn(&res, compat.Reservation, compat.NotActedOnIn(compat.Reservation, &res))
	}
	now := r.now()
	if reservationutil.IsTerminal(&res) {
		if err := r.deletePlaceholder(ctx, &res); err != nil {
			return reconcile.Result{}, err
		}
		at := reservationutil.FinishedAt(&res)
		if at.IsZero() {
			at = res.CreationTimestamp.Time
		}
		if wait := at.Add(r.GCAfter).Sub(now); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		logger.V(2).Info("garbage-collecting", "reservation", res.Name, "phase", res.Status.Phase)
		return reconcile.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, &res, client.Preconditions{UID: &res.UID}))
	}

	var pods []*corev1.Pod
	nodeExists := true
	if reservationutil.IsAvailable(&res) {
		var node corev1.Node
		if err := r.Client.Get(ctx, types.NamespacedName{Name: res.Status.NodeName}, &node); err != nil {
			if !apierrors.IsNotFound(err) {
				return reconcile.Result{}, err
			}
			nodeExists = false
		}
		var list corev1.PodList
		if err := r.Client.List(ctx, &list, client.MatchingFields{index.PodNodeName: res.Status.NodeName}); err != nil {
			return reconcile.Result{}, err
		}
		for i := range list.Items {
			pods = append(pods, &list.Items[i])
		}
	}
	next := reservationutil.Next(&res, pods, nodeExists, now)
	if !reservationutil.IsAvailable(&res) && next.Status.Phase != schedulingv1alpha1.ReservationFailed {
		// Pending: have it scheduled, and say why it is not (yet).
		why, err := r.ensurePlaceholder(ctx, &res)
		if err != nil {
			return reconcile.Result{}, err
		}
		next.Status.Phase = schedulingv1alpha1.ReservationPending
		if why != "" {
			setScheduled(&next.Status, corev1.ConditionFalse, schedulingv1alpha1.ReasonReservationUnschedulable, why, now)
		}
		next.Changed = next.Changed || !statusEqual(next.Status, res.Status)
	} else if err := r.deletePlaceholder(ctx, &res); err != nil {
		return reconcile.Result{}, err
	}
	if next.Changed {
		res.Status = next.Status
		if err := r.Client.Status().Update(ctx, &res); err != nil {
			return reconcile.Result{}, err
		}
		logger.V(2).Info("status", "reservation", res.Name, "phase", res.Status.Phase, "owners", len(res.Status.CurrentOwners))
	}
	if reservationutil.IsTerminal(&res) {
		return reconcile.Result{RequeueAfter: r.GCAfter}, nil
	}
	return reconcile.Result{RequeueAfter: next.RequeueAfter}, nil
}

// PlaceholderName is the placeholder pod of a reservation: its name when that
// fits a pod name with the prefix, else a readable part plus a hash.
func PlaceholderName(reservationName string) string {
	const prefix = "reservation-"
	if len(prefix)+len(reservationName) <= 63 {
		return prefix + reservationName
	}
	sum := sha256.Sum256([]byte(reservationName))
	return prefix + reservationName[:40] + "-" + hex.EncodeToString(sum[:5])
}

// ensurePlaceholder creates the reservation's placeholder pod when missing,
// and returns why the scheduler has not placed it yet ("" while no reason).
func (r *Reconciler) ensurePlaceholder(ctx context.Context, res *schedulingv1alpha1.Reservation) (string, error) {
	var pod corev1.Pod
	key := types.NamespacedName{Namespace: r.Namespace, Name: PlaceholderName(res.Name)}
	err := r.Client.Get(ctx, key, &pod)
	if err == nil {
		if !metav1.IsControlledBy(&pod, res) {
			// A placeholder of an earlier reservation of the same name: replace it.
			return "", client.IgnoreNotFound(r.Client.Delete(ctx, &pod, client.Preconditions{UID: &pod.UID}))
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return c.Message, nil
			}
		}
		return "", nil
	}
	if !apierrors.IsNotFound(err) {
		return "", err
	}
	var live schedulingv1alpha1.Reservation
	if err := r.Live.Get(ctx, types.NamespacedName{Name: res.Name}, &live); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if live.UID != res.UID || reservationutil.IsAvailable(&live) || reservationutil.IsTerminal(&live) {
		return "", nil // the cache is behind; its update event brings us back
	}
	return "", client.IgnoreAlreadyExists(r.Client.Create(ctx, Placeholder(res, key)))
}

// PlaceholderImage is the placeholder's containers' image. A placeholder is
// never bound (koord-scheduler's Reservation plugin binds first and deletes
// it; the admission policy refuses its Binding otherwise), so it is never
// pulled: it is set because a container must name one, and is the pause image
// so that nothing of the template could run even then.
const PlaceholderImage = "registry.k8s.io/pause:3.10"

// Placeholder is the pod koord-scheduler places for a Pending reservation:
// the template's scheduling-relevant fields only (labels, resources, node
// selection, affinity, tolerations, topology spread, host ports, priority),
// scheduled by koord-scheduler, never bound. Nothing that gives a running
// pod power comes with it: no service account token, volumes, host
// namespaces, commands or security context. A template pinned to a node
// (spec.nodeName) becomes a required node affinity, since a pod with
// nodeName set skips the scheduler and goes straight to the kubelet.
func Placeholder(res *schedulingv1alpha1.Reservation, key types.NamespacedName) *corev1.Pod {
	tmpl := res.Spec.Template.Spec.DeepCopy()
	spec := corev1.PodSpec{
		SchedulerName:                 SchedulerName,
		NodeSelector:                  tmpl.NodeSelector,
		Affinity:                      tmpl.Affinity,
		Tolerations:                   tmpl.Tolerations,
		TopologySpreadConstraints:     tmpl.TopologySpreadConstraints,
		PriorityClassName:             tmpl.PriorityClassName,
		Priority:                      tmpl.Priority,
		PreemptionPolicy:              tmpl.PreemptionPolicy,
		Overhead:                      tmpl.Overhead,
		Resources:                     tmpl.Resources,
		AutomountServiceAccountToken:  ptr.To(false),
		EnableServiceLinks:            ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		// Never run, never restarted: the scheduler deletes it once placed.
		RestartPolicy: corev1.RestartPolicyNever,
	}
	inert := func(c corev1.Container) corev1.Container {
		out := corev1.Container{Name: c.Name, Image: PlaceholderImage, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
		for _, p := range c.Ports {
			if p.HostPort != 0 { // NodePorts places pods by the host ports they take
				out.Ports = append(out.Ports, corev1.ContainerPort{ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIP: p.HostIP, Protocol: p.Protocol})
			}
		}
		return out
	}
	for _, c := range tmpl.InitContainers {
		spec.InitContainers = append(spec.InitContainers, inert(c))
	}
	for _, c := range tmpl.Containers {
		spec.Containers = append(spec.Containers, inert(c))
	}
	if n := tmpl.NodeName; n != "" {
		term := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}}}}
		if spec.Affinity == nil {
			spec.Affinity = &corev1.Affinity{}
		}
		if spec.Affinity.NodeAffinity == nil {
			spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		req := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		if req == nil || len(req.NodeSelectorTerms) == 0 {
			spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}
		} else {
			for i := range req.NodeSelectorTerms {
				req.NodeSelectorTerms[i].MatchFields = append(req.NodeSelectorTerms[i].MatchFields, term.MatchFields...)
			}
		}
	}
	annotations := map[string]string{reservationutil.PlaceholderAnnotation: res.Name}
	for _, k := range []string{extension.AnnotationResourceSpec, extension.AnnotationNUMATopologySpec} {
		if v, ok := res.Spec.Template.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       key.Namespace,
			Name:            key.Name,
			Labels:          res.Spec.Template.Labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(res, schedulingv1alpha1.SchemeGroupVersion.WithKind("Reservation"))},
		},
		Spec: spec,
	}
}

func (r *Reconciler) deletePlaceholder(ctx context.Context, res *schedulingv1alpha1.Reservation) error {
	var pod corev1.Pod
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: PlaceholderName(res.Name)}, &pod)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(&pod, res) {
		return nil
	}
	return client.IgnoreNotFound(r.Client.Delete(ctx, &pod, client.Preconditions{UID: &pod.UID}))
}

func setScheduled(st *schedulingv1alpha1.ReservationStatus, s corev1.ConditionStatus, reason, msg string, now time.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type == schedulingv1alpha1.ReservationConditionScheduled {
			if c.Status == s && c.Reason == reason && c.Message == msg {
				return
			}
			if c.Status != s {
				c.LastTransitionTime = metav1.NewTime(now)
			}
			c.Status, c.Reason, c.Message, c.LastProbeTime = s, reason, msg, metav1.NewTime(now)
			return
		}
	}
	st.Conditions = append(st.Conditions, schedulingv1alpha1.ReservationCondition{Type: schedulingv1alpha1.ReservationConditionScheduled,
		Status: s, Reason: reason, Message: msg, LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)})
}

func statusEqual(a, b schedulingv1alpha1.ReservationStatus) bool {
	if a.Phase != b.Phase || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message {
			return false
		}
	}
	return true
}

// SetupWithManager watches reservations, their placeholders (scheduling
// failures), pods that consume reservations (owners come and go) and nodes
// (deleted nodes end their reservations).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &schedulingv1alpha1.Reservation{}, ReservationNodeName, func(o client.Object) []string {
		if n := o.(*schedulingv1alpha1.Reservation).Status.NodeName; n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return err
	}
	byAnnotation := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if name := o.GetAnnotations()[reservationutil.PlaceholderAnnotation]; name != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
		}
		if a, err := extension.GetReservationAllocated(o.GetAnnotations()); err == nil && a != nil {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: a.Name}}}
		}
		return nil
	})
	onNode := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var list schedulingv1alpha1.ReservationList
		if err := mgr.GetClient().List(ctx, &list, client.MatchingFields{ReservationNodeName: o.GetName()}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, len(list.Items))
		for i := range list.Items {
			reqs[i].Name = list.Items[i].Name
		}
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&schedulingv1alpha1.Reservation{}).
		Watches(&corev1.Pod{}, byAnnotation).
		Watches(&corev1.Node{}, onNode, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(e event.CreateEvent) bool { return false },
			UpdateFunc: func(e event.UpdateEvent) bool { return false },
		})).
		Complete(r)
}
