package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is kube-scheduler's config group.
const GroupName = "kubescheduler.config.k8s.io"

// SchemeGroupVersion is the version operators write.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

var (
	localSchemeBuilder = &runtime.SchemeBuilder{addKnownTypes, addDefaultingFuncs}
	// AddToScheme adds the v1 args types, their defaults and conversions to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// The generated conversion functions register themselves here.
	localSchemeBuilder.Register(RegisterConversions)
}

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

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}
