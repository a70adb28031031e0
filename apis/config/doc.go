// Package config holds the internal types of the Koord scheduler plugins' args.
// They are registered in kube-scheduler's own scheme, so pluginConfig entries
// of a KubeSchedulerConfiguration decode, default and convert like in-tree args.
//
// +k8s:deepcopy-gen=package
package config
