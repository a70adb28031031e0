// Package v1 is the versioned (kubescheduler.config.k8s.io/v1) form of the Koord
// plugin args, the form operators write in pluginConfig.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/koord-project/koord/apis/config
// +k8s:defaulter-gen=TypeMeta
// +k8s:defaulter-gen-input=github.com/koord-project/koord/apis/config/v1
package v1
