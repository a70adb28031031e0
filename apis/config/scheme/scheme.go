// Package scheme registers the Koord plugin args in kube-scheduler's schemes.
// Importing it (koord-scheduler does) is what makes pluginConfig entries such
// as LoadAwareSchedulingArgs decode into typed, defaulted args.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	kubeschedulerv1 "k8s.io/kubernetes/pkg/scheduler/apis/config/v1"

	"github.com/koord-project/koord/apis/config"
	configv1 "github.com/koord-project/koord/apis/config/v1"
)

func init() {
	// The config file is decoded with the first scheme; the args inside it are
	// then converted to internal types with the second, which kube-scheduler
	// keeps separately. Both must know our kinds.
	AddToScheme(kubeschedulerscheme.Scheme)
	AddToScheme(kubeschedulerv1.GetPluginArgConversionScheme())
}

// AddToScheme adds the internal and v1 args types to a scheme.
func AddToScheme(s *runtime.Scheme) {
	utilruntime.Must(config.AddToScheme(s))
	utilruntime.Must(configv1.AddToScheme(s))
}
