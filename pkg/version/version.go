// Package version reports which Koord build is running and which Kubernetes
// release its scheduler framework comes from.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the Koord release, stamped at link time with
// -ldflags "-X github.com/koord-project/koord/pkg/version.Version=v0.1.0".
var Version = "v0.0.0-dev"

// kubernetesModule is the module whose scheduling framework we compile in.
const kubernetesModule = "k8s.io/kubernetes"

// KubernetesVersion returns the version of k8s.io/kubernetes linked into this
// binary, read from the module build info so that it can never drift from go.mod.
func KubernetesVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == kubernetesModule {
			if dep.Replace != nil {
				return dep.Replace.Version
			}
			return dep.Version
		}
	}
	return "unknown"
}

// String is the one-line form printed by --version.
func String(component string) string {
	return fmt.Sprintf("%s %s (Kubernetes %s, %s %s/%s)", component, Version, KubernetesVersion(),
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
