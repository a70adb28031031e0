package lenient

import (
	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	"k8s.io/apimachinery/pkg/runtime"

	analysisv1alpha1 "github.com/koord-project/koord/apis/analysis/v1alpha1"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

// Koord's kinds, as the scheduler and koord-manager read them.
var (
	Reservations = Kind{Resource: schedulingv1alpha1.SchemeGroupVersion.WithResource("reservations"),
		New: func() runtime.Object { return &schedulingv1alpha1.Reservation{} }, NewList: func() runtime.Object { return &schedulingv1alpha1.ReservationList{} }}
	NodeMetrics = Kind{Resource: slov1alpha1.SchemeGroupVersion.WithResource("nodemetrics"),
		New: func() runtime.Object { return &slov1alpha1.NodeMetric{} }, NewList: func() runtime.Object { return &slov1alpha1.NodeMetricList{} }}
	Recommendations = Kind{Resource: analysisv1alpha1.SchemeGroupVersion.WithResource("recommendations"),
		New: func() runtime.Object { return &analysisv1alpha1.Recommendation{} }, NewList: func() runtime.Object { return &analysisv1alpha1.RecommendationList{} }}
	RecommendationProfiles = Kind{Resource: analysisv1alpha1.SchemeGroupVersion.WithResource("recommendationprofiles"),
		New: func() runtime.Object { return &analysisv1alpha1.RecommendationProfile{} }, NewList: func() runtime.Object { return &analysisv1alpha1.RecommendationProfileList{} }}
	PodGroups = Kind{Resource: schedulingsigsv1alpha1.SchemeGroupVersion.WithResource("podgroups"),
		New: func() runtime.Object { return &schedulingsigsv1alpha1.PodGroup{} }, NewList: func() runtime.Object { return &schedulingsigsv1alpha1.PodGroupList{} }}
	ElasticQuotas = Kind{Resource: schedulingsigsv1alpha1.SchemeGroupVersion.WithResource("elasticquotas"),
		New: func() runtime.Object { return &schedulingsigsv1alpha1.ElasticQuota{} }, NewList: func() runtime.Object { return &schedulingsigsv1alpha1.ElasticQuotaList{} }}
	NodeSLOs = Kind{Resource: slov1alpha1.SchemeGroupVersion.WithResource("nodeslos"),
		New: func() runtime.Object { return &slov1alpha1.NodeSLO{} }, NewList: func() runtime.Object { return &slov1alpha1.NodeSLOList{} }}
)

// NodeResourceTopologies are topology.node.k8s.io/v1alpha2 objects, as the
// scheduler reads them when its topologySource is NodeResourceTopology.
var NodeResourceTopologies = Kind{Resource: nrtv1alpha2.SchemeGroupVersion.WithResource("noderesourcetopologies"),
	New: func() runtime.Object { return &nrtv1alpha2.NodeResourceTopology{} }, NewList: func() runtime.Object { return &nrtv1alpha2.NodeResourceTopologyList{} }}
