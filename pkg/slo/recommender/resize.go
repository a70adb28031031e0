package recommender

import (
	"context"
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	analysisv1alpha1 "github.com/koord-project/koord/apis/analysis/v1alpha1"
	"github.com/koord-project/koord/apis/extension"
)

// resizeTolerance: a request within 10 % of the wanted value is left alone,
// so that small moves of the target do not resize pods over and over.
const resizeTolerance = 0.10

// resize moves the requests of the target's running pods to the
// recommendation through the pods/resize subresource (kubelet applies it
// without a restart). It never goes outside the policy's bounds, never
// below the highest usage seen, and never touches LSE or LSR pods, whose
// CPUs are exclusively bound.
func (r *Recommender) resize(ctx context.Context, rec *analysisv1alpha1.Recommendation, res Result) error {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(rec.Namespace)); err != nil {
		return err
	}
	var errs []string
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil || resizing(pod) {
			continue
		}
		if q, _ := extension.GetPodQoSClass(pod); q == extension.QoSLSE || q == extension.QoSLSR {
			continue
		}
		if len(r.covering(ctx, []*analysisv1alpha1.Recommendation{rec}, pod)) == 0 {
			continue
		}
		resized, changes := Resized(pod, rec.Spec.UpdatePolicy, res)
		if len(changes) == 0 {
			continue
		}
		if err := r.Client.SubResource("resize").Update(ctx, resized); err != nil {
			r.Options.Metrics.resize("error")
			errs = append(errs, fmt.Sprintf("pod %s: %v", pod.Name, err))
			continue
		}
		r.Options.Metrics.resize("resized")
		r.Recorder.Eventf(pod, corev1.EventTypeNormal, "Resized", "resized in place to recommendation %s: %s", rec.Name, strings.Join(changes, ", "))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func resizing(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if (c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Resized is pod with its containers' requests moved to the
// recommendation, and a line per change; no changes, no resize. A limit
// moves with its request, keeping their ratio, so the pod keeps its QoS
// class. A resource the container does not request is left alone (adding
// one would change the QoS class, which a resize may not), and so is one
// whose highest usage is above the policy's maximum.
func Resized(pod *corev1.Pod, policy *analysisv1alpha1.RecommendationUpdatePolicy, res Result) (*corev1.Pod, []string) {
	out := pod.DeepCopy()
	var changes []string
	for _, rc := range res.Containers {
		var c *corev1.Container
		for i := range out.Spec.Containers {
			if out.Spec.Containers[i].Name == rc.ContainerName {
				c = &out.Spec.Containers[i]
			}
		}
		if c == nil {
			continue
		}
		for _, rn := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			cur, ok := c.Resources.Requests[rn]
			target, okT := rc.Resources[rn]
			if !ok || cur.IsZero() || !okT {
				continue
			}
			want := target.DeepCopy()
			if policy != nil {
				if lo, ok := policy.MinAllowed[rn]; ok && want.Cmp(lo) < 0 {
					want = lo.DeepCopy()
				}
				if hi, ok := policy.MaxAllowed[rn]; ok && want.Cmp(hi) > 0 {
					want = hi.DeepCopy()
				}
			}
			if peak, ok := res.Peaks[rc.ContainerName][rn]; ok && want.Cmp(peak) < 0 {
				if policy != nil {
					if hi, ok := policy.MaxAllowed[rn]; ok && peak.Cmp(hi) > 0 {
						continue
					}
				}
				want = peak.DeepCopy()
			}
			curF, wantF := cur.AsApproximateFloat64(), want.AsApproximateFloat64()
			if math.Abs(wantF-curF) <= resizeTolerance*curF {
				continue
			}
			c.Resources.Requests[rn] = want
			line := fmt.Sprintf("%s %s request %s → %s", c.Name, rn, cur.String(), want.String())
			if lim, ok := c.Resources.Limits[rn]; ok {
				scaled := scale(lim, wantF/curF, rn)
				if scaled.Cmp(want) < 0 {
					scaled = want.DeepCopy()
				}
				c.Resources.Limits[rn] = scaled
				line += fmt.Sprintf(", limit %s → %s", lim.String(), scaled.String())
			}
			changes = append(changes, line)
		}
	}
	return out, changes
}

func scale(q resource.Quantity, f float64, rn corev1.ResourceName) resource.Quantity {
	if rn == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(int64(math.Ceil(float64(q.MilliValue())*f)), resource.DecimalSI)
	}
	return *resource.NewQuantity(int64(math.Ceil(float64(q.Value())*f)), resource.BinarySI)
}
