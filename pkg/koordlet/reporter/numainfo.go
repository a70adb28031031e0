// Package reporter publishes what koordlet learns about its node to the API
// server: the numa-info ConfigMap (and, later, NodeMetric).
package reporter

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/extension"
)

// Result says what a publish did.
type Result string

const (
	Created   Result = "created"
	Updated   Result = "updated"
	Unchanged Result = "unchanged"
)

// CurrentConfigMap returns the live numa-info ConfigMap (nil when there is
// none). koordlet passes its informer's copy, so that an unchanged topology
// costs no API call.
type CurrentConfigMap func() (*corev1.ConfigMap, error)

// PublishNUMAInfo makes kube-system/<node>-numa-info say info, owned by the
// Node so that it goes away with it. It writes only when the data, the
// labels or the owner differ from what is there, and creates the ConfigMap
// when it is missing (deleted by hand, or never published).
func PublishNUMAInfo(ctx context.Context, client kubernetes.Interface, node *corev1.Node, info *extension.NUMAInfo, current CurrentConfigMap) (Result, error) {
	want, err := extension.NewNUMAInfoConfigMap(node.Name, info)
	if err != nil {
		return "", err
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, BlockOwnerDeletion: ptr.To(false)}
	want.OwnerReferences = []metav1.OwnerReference{owner}

	have, err := current()
	if err != nil {
		return "", err
	}
	cms := client.CoreV1().ConfigMaps(want.Namespace)
	if have == nil {
		if _, err := cms.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			if !apierrors.IsAlreadyExists(err) {
				return "", fmt.Errorf("creating configmap %s/%s: %w", want.Namespace, want.Name, err)
			}
			// The informer lags: fall through to an update of the live object.
			if have, err = cms.Get(ctx, want.Name, metav1.GetOptions{}); err != nil {
				return "", err
			}
		} else {
			return Created, nil
		}
	}
	if maps.Equal(have.Data, want.Data) && labelsInclude(have.Labels, want.Labels) && ownedBy(have, node) {
		return Unchanged, nil
	}
	next := have.DeepCopy()
	next.Data = want.Data
	next.BinaryData = nil
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	maps.Copy(next.Labels, want.Labels)
	// A Node re-created under the same name has a new UID: the old reference
	// would make the garbage collector delete the ConfigMap.
	refs := []metav1.OwnerReference{owner}
	for _, o := range next.OwnerReferences {
		if o.Kind != "Node" {
			refs = append(refs, o)
		}
	}
	next.OwnerReferences = refs
	if _, err := cms.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("updating configmap %s/%s: %w", want.Namespace, want.Name, err)
	}
	return Updated, nil
}

func labelsInclude(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func ownedBy(cm *corev1.ConfigMap, node *corev1.Node) bool {
	for _, o := range cm.OwnerReferences {
		if o.Kind == "Node" && o.UID == node.UID {
			return true
		}
	}
	return false
}
