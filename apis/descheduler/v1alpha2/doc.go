// Package v1alpha2 is koord-descheduler's configuration in Koordinator's
// shape (apiVersion descheduler/v1alpha2, kind DeschedulerConfiguration),
// with the args of the plugins it runs: LowNodeLoad and MigrationController.
// A Koordinator descheduler configuration loads unchanged: every field
// Koordinator has is here; what Koord does not act on is reported at start
// (NotActedOn), and a field no Koordinator version has stops the binary,
// naming it.
//
// +k8s:deepcopy-gen=package
package v1alpha2
