// Package migration is koord-descheduler's PodMigrationJob controller. A
// job moves one pod. In ReservationFirst mode (the default) it creates a
// Reservation owned by the pod's controller, kept off the pod's node, waits
// until koord-scheduler has made it Available, and only then evicts the pod
// through the Eviction API (so PodDisruptionBudgets hold); the replacement
// the controller creates lands in the reservation. A reservation that
// cannot be placed before the job's TTL fails the job with nothing evicted.
// EvictDirectly skips the reservation. Limits on jobs in progress at once
// (per node, namespace, workload, globally) and on a workload's moves
// within a window keep a round of moves from hurting a service.
package migration

import (
	"context"
	"fmt"
	"slices"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/koord-project/koord/apis/descheduler/v1alpha2"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
)

// LabelJobPod marks a job with its pod's UID, so that one pod has one
// active job.
const LabelJobPod = "descheduler.koordinator.sh/pod-uid"

// Reconciler runs PodMigrationJobs.
type Reconciler struct {
	Client client.Client
	// Live reads Reservations from the API server: the job's own, just
	// created, may not be in the cache yet, and "not found" there would fail
	// the job (or make a second one).
	Live client.Reader
	// Kube evicts pods (the Eviction subresource).
	Kube     kubernetes.Interface
	Args     *v1alpha2.MigrationControllerArgs
	Recorder record.EventRecorder
	// Limiter paces evictions (evictQPS, evictBurst).
	Limiter *rate.Limiter
	// Guard says which pods may move at all; a job for any other fails
	// with ForbiddenMigratePod before anything is reserved or evicted.
	Guard *Guard
	// Now is the clock (tests set it).
	Now func() time.Time
}

func (r *Reconciler) live() client.Reader {
	if r.Live != nil {
		return r.Live
	}
	return r.Client
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// SetupWithManager registers the controller; reservations wake their job.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Limiter == nil {
		r.Limiter = rate.NewLimiter(rate.Limit(float64(*r.Args.EvictQPS)), int(*r.Args.EvictBurst))
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("podmigrationjob").
		For(&schedulingv1alpha1.PodMigrationJob{}).
		Watches(&schedulingv1alpha1.Reservation{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &schedulingv1alpha1.PodMigrationJob{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: int(*r.Args.MaxConcurrentReconciles)}).
		Complete(r)
}

func terminal(p schedulingv1alpha1.PodMigrationJobPhase) bool {
	return p == schedulingv1alpha1.PodMigrationJobSucceeded || p == schedulingv1alpha1.PodMigrationJobFailed || p == schedulingv1alpha1.PodMigrationJobAborted
}

// Reconcile moves a job one step. An unfinished job is looked at again at
// least every 10 seconds, so that its TTL is kept whatever it waits for.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := r.step(ctx, req)
	if err == nil && res.RequeueAfter == 0 {
		job := &schedulingv1alpha1.PodMigrationJob{}
		if r.Client.Get(ctx, req.NamespacedName, job) == nil && !terminal(job.Status.Phase) {
			res.RequeueAfter = 10 * time.Second
		}
	}
	return res, err
}

func (r *Reconciler) step(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	job := &schedulingv1alpha1.PodMigrationJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, job); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if terminal(job.Status.Phase) || job.Spec.Paused {
		return reconcile.Result{}, nil
	}
	if job.Spec.PodRef == nil {
		return reconcile.Result{}, r.finish(ctx, job, schedulingv1alpha1.PodMigrationJobFailed, schedulingv1alpha1.PodMigrationJobReasonMissingPod, "spec.podRef is not set")
	}
	ttl := r.Args.DefaultJobTTL.Duration
	if job.Spec.TTL != nil {
		ttl = job.Spec.TTL.Duration
	}
	if deadline := job.CreationTimestamp.Add(ttl); ttl > 0 && !r.now().Before(deadline) {
		return reconcile.Result{}, r.fail(ctx, job, schedulingv1alpha1.PodMigrationJobReasonTimeout,
			fmt.Sprintf("not done within its TTL of %v (%s)", ttl, orNothing(job.Status.Message)))
	}
	pod := &corev1.Pod{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: job.Spec.PodRef.Namespace, Name: job.Spec.PodRef.Name}, pod)
	if apierrors.IsNotFound(err) || (err == nil && job.Spec.PodRef.UID != "" && pod.UID != job.Spec.PodRef.UID) {
		pod = nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	evicted := hasCondition(job, schedulingv1alpha1.PodMigrationJobConditionEviction, schedulingv1alpha1.PodMigrationJobConditionStatusTrue)
	if pod == nil && !evicted {
		return reconcile.Result{}, r.finish(ctx, job, schedulingv1alpha1.PodMigrationJobFailed, schedulingv1alpha1.PodMigrationJobReasonMissingPod, "the pod is gone")
	}
	if job.Status.Phase == "" || job.Status.Phase == schedulingv1alpha1.PodMigrationJobPending {
		if r.Guard != nil {
			why, ready := r.Guard.Forbidden(pod)
			if !ready {
				const msg = "the descheduler's caches have not synced yet"
				if job.Status.Message == msg {
					return reconcile.Result{RequeueAfter: time.Second}, nil // said so already
				}
				return reconcile.Result{RequeueAfter: time.Second}, r.status(ctx, job, schedulingv1alpha1.PodMigrationJobPending, "Waiting", msg)
			}
			if why != "" {
				return reconcile.Result{}, r.finish(ctx, job, schedulingv1alpha1.PodMigrationJobFailed, schedulingv1alpha1.PodMigrationJobReasonForbiddenMigratePod,
					fmt.Sprintf("pod %s/%s may not be moved: %s", pod.Namespace, pod.Name, why))
			}
		}
		if r.Args.DryRun {
			return reconcile.Result{}, r.status(ctx, job, schedulingv1alpha1.PodMigrationJobPending, "DryRun", "dry run: would move the pod; nothing is done")
		}
		if why := r.arbitrate(ctx, job, pod); why != "" {
			return reconcile.Result{RequeueAfter: 5 * time.Second}, r.status(ctx, job, schedulingv1alpha1.PodMigrationJobPending, "Waiting", why)
		}
		if err := r.status(ctx, job, schedulingv1alpha1.PodMigrationJobRunning, "", "started"); err != nil {
			return reconcile.Result{}, err
		}
		r.Recorder.Eventf(pod, corev1.EventTypeNormal, "Migrating", "PodMigrationJob %s moves this pod off node %s", job.Name, pod.Spec.NodeName)
	}
	mode := job.Spec.Mode
	if mode == "" {
		mode = schedulingv1alpha1.PodMigrationJobMode(r.Args.DefaultJobMode)
	}
	if evicted {
		return r.afterEviction(ctx, job, mode)
	}
	if mode == schedulingv1alpha1.PodMigrationJobModeReservationFirst {
		res, result, err := r.reservation(ctx, job, pod)
		if res == nil || err != nil {
			return result, err
		}
		job.Status.NodeName = res.Status.NodeName
	}
	return r.evict(ctx, job, pod)
}

func orNothing(s string) string {
	if s == "" {
		return "no progress"
	}
	return "last: " + s
}

// reservation returns the job's Reservation once it is Available; until
// then it creates it or says what it waits for.
func (r *Reconciler) reservation(ctx context.Context, job *schedulingv1alpha1.PodMigrationJob, pod *corev1.Pod) (*schedulingv1alpha1.Reservation, reconcile.Result, error) {
	var ref *corev1.ObjectReference
	if o := job.Spec.ReservationOptions; o != nil {
		ref = o.ReservationRef
	}
	if ref == nil {
		// A reservation this job made before its spec update was seen (a
		// stale cache, a conflict, a restart) is adopted, not made twice.
		res, err := r.ownReservation(ctx, job)
		if err != nil {
			return nil, reconcile.Result{}, err
		}
		if res == nil {
			if res, err = r.createReservation(ctx, job, pod); err != nil {
				return nil, reconcile.Result{}, r.fail(ctx, job, schedulingv1alpha1.PodMigrationJobReasonFailedCreateReservation, err.Error())
			}
		}
		if job.Spec.ReservationOptions == nil {
			job.Spec.ReservationOptions = &schedulingv1alpha1.PodMigrateReservationOptions{}
		}
		job.Spec.ReservationOptions.ReservationRef = &corev1.ObjectReference{APIVersion: schedulingv1alpha1.SchemeGroupVersion.String(), Kind: "Reservation", Name: res.Name, UID: res.UID}
		if err := r.Client.Update(ctx, job); err != nil {
			return nil, reconcile.Result{}, err
		}
		setCondition(job, schedulingv1alpha1.PodMigrationJobConditionReservationCreated, schedulingv1alpha1.PodMigrationJobConditionStatusTrue, "", "reservation "+res.Name, r.now())
		r.Recorder.Eventf(job, corev1.EventTypeNormal, "ReservationCreated", "Reservation %s holds a place for the replacement of %s/%s off node %s", res.Name, pod.Namespace, pod.Name, pod.Spec.NodeName)
		return nil, reconcile.Result{RequeueAfter: 2 * time.Second}, r.status(ctx, job, schedulingv1alpha1.PodMigrationJobRunning, string(schedulingv1alpha1.PodMigrationJobConditionReservationCreated), "waiting for the reservation to be scheduled")
	}
	res := &schedulingv1alpha1.Reservation{}
	if err := r.live().Get(ctx, types.NamespacedName{Name: ref.Name}, res); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, reconcile.Result{}, r.fail(ctx, job, schedulingv1alpha1.PodMigrationJobReasonMissingReservation, "reservation "+ref.Name+" is gone")
		}
		return nil, reconcile.Result{}, err
	}
	switch res.Status.Phase {
	case schedulingv1alpha1.ReservationAvailable:
		if res.Status.NodeName == pod.Spec.NodeName {
			return nil, reconcile.Result{}, r.fail(ctx, job, schedulingv1alpha1.PodMigrationJobReasonForbiddenMigratePod, "the reservation landed on the pod's own node "+res.Status.NodeName)
		}
		setCondition(job, schedulingv1alpha1.PodMigrationJobConditionReservationScheduled, schedulingv1alpha1.PodMigrationJobConditionStatusTrue, "", "on node "+res.Status.NodeName, r.now())
		return res, reconcile.Result{}, nil
	case schedulingv1alpha1.ReservationFailed, schedulingv1alpha1.ReservationSucceeded:
		return nil, reconcile.Result{}, r.fail(ctx, job, schedulingv1alpha1.PodMigrationJobReasonReservationExpired, fmt.Sprintf("reservation %s is %s before the pod was evicted", res.Name, res.Status.Phase))
	}
	msg := "waiting for reservation " + res.Name + " to be scheduled"
	for _, c := range res.Status.Conditions {
		if c.Type == schedulingv1alpha1.ReservationConditionScheduled && c.Status == corev1.ConditionFalse {
			msg = fmt.Sprintf("reservation %s cannot be scheduled yet: %s", res.Name, c.Message)
			setCondition(job, schedulingv1alpha1.PodMigrationJobConditionReservationScheduled, schedulingv1alpha1.PodMigrationJobConditionStatusFalse, c.Reason, c.Message, r.now())
		}
	}
	return nil, reconcile.Result{RequeueAfter: 5 * time.Second}, r.status(ctx, job, schedulingv1alpha1.PodMigrationJobRunning, string(schedulingv1alpha1.PodMigrationJobConditionReservationCreated), msg)
}

// ownReservation is the Reservation this job controls, if it made one.
func (r *Reconciler) ownReservation(ctx context.Context, job *schedulingv1alpha1.PodMigrationJob) (*schedulingv1alpha1.Reservation, error) {
	var list schedulingv1alpha1.ReservationList
	if err := r.live().List(ctx, &list); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], job) {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// createReservation makes the replacement's Reservation: the pod's spec as
// template, kept off its node, owned by its controller (the pod itself when
// it has none), expiring with the job; the job owns it.
func (r *Reconciler) createReservation(ctx context.Context, job *schedulingv1alpha1.PodMigrationJob, pod *corev1.Pod) (*schedulingv1alpha1.Reservation, error) {
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Labels: pod.Labels, Annotations: reservationAnnotations(pod)}, Spec: *pod.Spec.DeepCopy()}
	tmpl.Spec.NodeName = ""
	tmpl.Spec.SchedulerName = r.Args.SchedulerNames[0]
	avoid(&tmpl.Spec, pod.Spec.NodeName)
	owner := schedulingv1alpha1.ReservationOwner{Object: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
	if c := metav1.GetControllerOf(pod); c != nil {
		owner = schedulingv1alpha1.ReservationOwner{Controller: &schedulingv1alpha1.ReservationControllerReference{OwnerReference: *c, Namespace: pod.Namespace}}
	}
	ttl := r.Args.DefaultJobTTL.Duration
	if job.Spec.TTL != nil {
		ttl = job.Spec.TTL.Duration
	}
	res := &schedulingv1alpha1.Reservation{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pmj-" + truncate(job.Name, 40) + "-",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, schedulingv1alpha1.SchemeGroupVersion.WithKind("PodMigrationJob"))}},
		Spec: schedulingv1alpha1.ReservationSpec{Template: tmpl, Owners: []schedulingv1alpha1.ReservationOwner{owner},
			TTL: &metav1.Duration{Duration: ttl}, AllocateOnce: ptr.To(true)},
	}
	if o := job.Spec.ReservationOptions; o != nil && o.Template != nil {
		res.Labels, res.Annotations = o.Template.Labels, o.Template.Annotations
		if o.Template.Spec.Template != nil {
			res.Spec.Template = o.Template.Spec.Template
		}
		if len(o.Template.Spec.Owners) > 0 {
			res.Spec.Owners = o.Template.Spec.Owners
		}
	}
	return res, r.Client.Create(ctx, res)
}

// reservationAnnotations keeps the pod's scheduling requests (CPU binding,
// NUMA policy) and drops what the scheduler wrote for the old placement.
func reservationAnnotations(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for k, v := range pod.Annotations {
		switch k {
		case "scheduling.koordinator.sh/resource-status", "scheduling.koordinator.sh/reservation-allocated":
			continue
		}
		out[k] = v
	}
	return out
}

// avoid adds a required node affinity term excluding node to every term.
func avoid(spec *corev1.PodSpec, node string) {
	req := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{node}}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchFields = append(terms[i].MatchFields, req)
	}
}

// evict evicts the pod (paced by evictQPS) through the Eviction API, or
// deletes it with evictionPolicy Delete.
func (r *Reconciler) evict(ctx context.Context, job *schedulingv1alpha1.PodMigrationJob, pod *corev1.Pod) (reconcile.Result, error) {
	if !r.Limiter.Allow() {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	opts := job.Spec.DeleteOptions
	if opts == nil {
		opts = r.Args.DefaultDeleteOptions
	}
	del := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}
	if opts != nil {
		del = *opts.DeepCopy()
		del.Preconditions = &metav1.Preconditions{UID: &pod.UID}
	}
	var err error
	if r.Args.EvictionPolicy == v1alpha2.EvictionPolicyDelete {
		err = r.Kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, del)
	} else {
		// Not the typed Evict: its client retries a 429 (a disruption
		// budget's refusal) for minutes, holding the worker; the job retries
		// on its own schedule instead.
		err = r.Kube.PolicyV1().RESTClient().Post().AbsPath("/api/v1").Namespace(pod.Namespace).Resource("pods").Name(pod.Name).SubResource("eviction").
			Body(&policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}, DeleteOptions: &del}).
			MaxRetries(0).Do(ctx).Error()
	}
	switch {
	case apierrors.IsTooManyRequests(err):
		// A PodDisruptionBudget allows no disruption now: try again until the TTL.
		setCondition(job, schedulingv1alpha1.PodMigrationJobConditionEviction, schedulingv1alpha1.PodMigrationJobConditionStatusFalse, schedulingv1alpha1.PodMigrationJobReasonFailedEvict, err.Error(), r.now())
		return reconcile.Result{RequeueAfter: 5 * time.Second}, r.status(ctx, job, schedulingv1alpha1.PodMigrationJobRunning, schedulingv1alpha1.PodMigrationJobReasonEvicting, "eviction refused: "+err.Error())
	case err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
		return reconcile.Result{}, err
	}
	setCondition(job, schedulingv1alpha1.PodMigrationJobConditionEviction, schedulingv1alpha1.PodMigrationJobConditionStatusTrue, schedulingv1alpha1.PodMigrationJobReasonEvictComplete, "", r.now())
	r.Recorder.Eventf(pod, corev1.EventTypeNormal, "Evicted", "evicted by PodMigrationJob %s", job.Name)
	r.Recorder.Eventf(job, corev1.EventTypeNormal, "Evicted", "pod %s/%s evicted from node %s", pod.Namespace, pod.Name, pod.Spec.NodeName)
	return reconcile.Result{RequeueAfter: time.Second}, r.status(ctx, job, schedulingv1alpha1.PodMigrationJobRunning, schedulingv1alpha1.PodMigrationJobReasonEvictComplete, "evicted")
}

// afterEviction ends the job: at once without a reservation; with one,
// when the replacement has taken it.
func (r *Reconciler) afterEviction(ctx context.Context, job *schedulingv1alpha1.PodMigrationJob, mode schedulingv1alpha1.PodMigrationJobMode) (reconcile.Result, error) {
	o := job.Spec.ReservationOptions
	if mode != schedulingv1alpha1.PodMigrationJobModeReservationFirst || o == nil || o.ReservationRef == nil {
		return reconcile.Result{}, r.finish(ctx, job, schedulingv1alpha1.PodMigrationJobSucceeded, schedulingv1alpha1.PodMigrationJobReasonEvictComplete, "the pod was evicted")
	}
	res := &schedulingv1alpha1.Reservation{}
	if err := r.live().Get(ctx, types.NamespacedName{Name: o.ReservationRef.Name}, res); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.fail(ctx, job, schedulingv1alpha1.PodMigrationJobReasonMissingReservation, "the reservation is gone before the replacement took it")
		}
		return reconcile.Result{}, err
	}
	if len(res.Status.CurrentOwners) > 0 || res.Status.Phase == schedulingv1alpha1.ReservationSucceeded {
		var pod *corev1.ObjectReference
		if len(res.Status.CurrentOwners) > 0 {
			pod = &res.Status.CurrentOwners[0]
		}
		job.Status.PodRef = pod
		job.Status.NodeName = res.Status.NodeName
		setCondition(job, schedulingv1alpha1.PodMigrationJobConditionReservationPodBoundReservation, schedulingv1alpha1.PodMigrationJobConditionStatusTrue, "", "", r.now())
		msg := "the replacement took reservation " + res.Name + " on node " + res.Status.NodeName
		r.Recorder.Event(job, corev1.EventTypeNormal, "Succeeded", msg)
		return reconcile.Result{}, r.finish(ctx, job, schedulingv1alpha1.PodMigrationJobSucceeded, schedulingv1alpha1.PodMigrationJobReasonEvictComplete, msg)
	}
	return reconcile.Result{RequeueAfter: 2 * time.Second}, r.status(ctx, job, schedulingv1alpha1.PodMigrationJobRunning, schedulingv1alpha1.PodMigrationJobReasonWaitForPodBindReservation, "evicted; waiting for the replacement to take reservation "+res.Name)
}

// fail ends the job Failed and deletes a reservation it made that no pod
// took (nothing was evicted, or the replacement went elsewhere).
func (r *Reconciler) fail(ctx context.Context, job *schedulingv1alpha1.PodMigrationJob, reason, msg string) error {
	res, err := r.ownReservation(ctx, job)
	if err != nil {
		return err
	}
	// Unused (or already failed by its own TTL): nobody needs it.
	if res != nil && len(res.Status.CurrentOwners) == 0 && res.Status.Phase != schedulingv1alpha1.ReservationSucceeded {
		if err := r.Client.Delete(ctx, res); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	r.Recorder.Event(job, corev1.EventTypeWarning, reason, msg)
	return r.finish(ctx, job, schedulingv1alpha1.PodMigrationJobFailed, reason, msg)
}

func (r *Reconciler) finish(ctx context.Context, job *schedulingv1alpha1.PodMigrationJob, phase schedulingv1alpha1.PodMigrationJobPhase, reason, msg string) error {
	job.Status.Reason = reason
	return r.status(ctx, job, phase, job.Status.Status, msg)
}

func (r *Reconciler) status(ctx context.Context, job *schedulingv1alpha1.PodMigrationJob, phase schedulingv1alpha1.PodMigrationJobPhase, status, msg string) error {
	job.Status.Phase, job.Status.Status, job.Status.Message = phase, status, msg
	return r.Client.Status().Update(ctx, job)
}

func hasCondition(job *schedulingv1alpha1.PodMigrationJob, t schedulingv1alpha1.PodMigrationJobConditionType, s schedulingv1alpha1.PodMigrationJobConditionStatus) bool {
	return slices.ContainsFunc(job.Status.Conditions, func(c schedulingv1alpha1.PodMigrationJobCondition) bool { return c.Type == t && c.Status == s })
}

func setCondition(job *schedulingv1alpha1.PodMigrationJob, t schedulingv1alpha1.PodMigrationJobConditionType, s schedulingv1alpha1.PodMigrationJobConditionStatus, reason, msg string, now time.Time) {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != s {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason, c.Message, c.LastProbeTime = s, reason, msg, metav1.NewTime(now)
		return
	}
	job.Status.Conditions = append(job.Status.Conditions, schedulingv1alpha1.PodMigrationJobCondition{Type: t, Status: s, Reason: reason, Message: msg,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)})
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
