package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
)

// PathValidateQuota is the ElasticQuota validating webhook's path.
const PathValidateQuota = "/validate-elasticquota"

// validateQuota refuses an ElasticQuota whose name a quota of another
// namespace has: quota names are cluster-wide (a pod's quota label names
// one), as in Koordinator, and the scheduler would leave the newer one
// unusable. It is the webhook's part of the rule; the scheduler's tree
// keeps the older quota's name when the webhook did not answer.
func validateQuota(ctx context.Context, c client.Reader, req admission.Request) admission.Response {
	q := &schedulingsigsv1alpha1.ElasticQuota{}
	if err := json.Unmarshal(req.Object.Raw, q); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	// The request's namespace is the one the API server stores it in.
	ns := req.Namespace
	var all schedulingsigsv1alpha1.ElasticQuotaList
	if err := c.List(ctx, &all, client.UnsafeDisableDeepCopy); err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("listing ElasticQuotas: %w", err))
	}
	for i := range all.Items {
		other := &all.Items[i]
		if other.Name == q.Name && other.Namespace != ns {
			return denied(field.ErrorList{field.Duplicate(field.NewPath("metadata", "name"),
				fmt.Sprintf("%s (taken by ElasticQuota %s/%s: quota names are cluster-wide)", q.Name, other.Namespace, other.Name))})
		}
	}
	return admission.Allowed("")
}
