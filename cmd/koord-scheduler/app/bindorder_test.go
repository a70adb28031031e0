package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/koord-project/koord/manifests"
)

// Profiles as operators write them, loaded the way kube-scheduler loads them
// (defaults merged in): Reservation enabled through multiPoint alone binds
// after DefaultBinder and is refused with the fix; the shipped profile, and a
// profile without Reservation, start.
func TestBindOrder(t *testing.T) {
	head := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection: {leaderElect: false}\nprofiles:\n  - schedulerName: koord-scheduler\n    plugins:\n"
	for name, tc := range map[string]struct {
		config string
		want   string
	}{
		"multiPoint alone": {config: head + "      multiPoint: {enabled: [{name: Reservation}]}\n",
			want: "plugin Reservation runs but binds after [DefaultBinder Reservation]: it must be the first binder"},
		"bind without multiPoint": {config: head + "      multiPoint: {enabled: [{name: LoadAwareScheduling}]}\n      bind: {enabled: [{name: Reservation}]}\n      filter: {enabled: [{name: Reservation}]}\n",
			want: "binds after [DefaultBinder Reservation]"},
		"bind first":        {config: head + "      multiPoint: {enabled: [{name: Reservation}]}\n      bind: {enabled: [{name: Reservation}]}\n"},
		"DefaultBinder off": {config: head + "      multiPoint: {enabled: [{name: Reservation}]}\n      bind: {disabled: [{name: DefaultBinder}]}\n"},
		"no Reservation":    {config: head + "      multiPoint: {enabled: [{name: NodeNUMAResource}]}\n"},
		"shipped":           {config: string(manifests.SchedulerConfig)},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			err := ValidateConfigFile(path)
			if tc.want == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `profile "koord-scheduler"`)) {
				t.Fatalf("%v, want an error with %q", err, tc.want)
			}
		})
	}
}
