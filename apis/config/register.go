package config

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is kube-scheduler's config group: plugin args live beside in-tree ones.
const GroupName = "kubescheduler.config.k8s.io"

// SchemeGroupVersion is the internal version of the args.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

var (
	localSchemeBuilder = &runtime.SchemeBuilder{addKnownTypes}
	// AddToScheme adds the internal args types to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&LoadAwareSchedulingArgs{},
		&NodeNUMAResourceArgs{},
		&ReservationArgs{},
		&CoschedulingArgs{},
		&ElasticQuotaArgs{},
	)
	return nil
}
