// Package manifests embeds the shipped manifests so that programs (the demo,
// the in-process control plane) install exactly what operators install.
package manifests

import (
	"embed"

	// thirdparty/ holds PodGroup and ElasticQuota CRDs generated from these
	// types (hack/update-codegen.sh); the import pins the module that defines them.
	_ "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// CRDs holds manifests/crds/*.yaml.
//
//go:embed crds/*.yaml
var CRDs embed.FS

// ThirdPartyCRDs holds manifests/thirdparty/*.yaml: CRDs of other projects
// Koord reads when configured to (NodeResourceTopology).
//
//go:embed thirdparty/*.yaml
var ThirdPartyCRDs embed.FS

// SchedulerConfig is manifests/scheduler/koord-scheduler-config.yaml.
//
//go:embed scheduler/koord-scheduler-config.yaml
var SchedulerConfig []byte

// RBAC holds manifests/rbac/*.yaml.
//
//go:embed rbac/*.yaml
var RBAC embed.FS

// PriorityClasses is manifests/priorityclasses.yaml.
//
//go:embed priorityclasses.yaml
var PriorityClasses []byte

// SampleWorkload is manifests/samples/workload.yaml.
//
//go:embed samples/workload.yaml
var SampleWorkload []byte

// SampleReservation is manifests/samples/reservation.yaml: a Reservation, a
// pod that is not its owner and one that is, to apply in that order.
//
//go:embed samples/reservation.yaml
var SampleReservation []byte

// Policies holds manifests/policies/*.yaml: the ValidatingAdmissionPolicies
// that hold each writer of Koord's objects to its job.
//
//go:embed policies/*.yaml
var Policies embed.FS
