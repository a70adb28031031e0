// Package controlplane runs a real control plane inside the current process:
// an embedded etcd and a kube-apiserver with Koord's CRDs installed, plus
// koord-scheduler on demand. Integration tests, the demo and benchmarks share it.
package controlplane

import (
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"

	"github.com/koord-project/koord/manifests"
	koordclientset "github.com/koord-project/koord/pkg/client/clientset/versioned"
	"github.com/koord-project/koord/pkg/client/koordclient"
)

// Options shape the control plane.
type Options struct {
	// RBAC turns on Node,RBAC authorization, so components can be run with the
	// RBAC we ship and fail where it is missing something.
	RBAC bool
}

// ControlPlane is a running etcd + kube-apiserver.
type ControlPlane struct {
	// Config is an admin (system:masters) client config.
	Config *rest.Config
	Client kubernetes.Interface
	Koord  koordclientset.Interface
	// Kubeconfig is the path of an admin kubeconfig for kubectl and binaries.
	Kubeconfig string
	// Dir holds all on-disk state; it is removed by Stop.
	Dir string

	etcd   *embed.Etcd
	server *apiServer
	// storagePrefix is where the API server keeps objects in etcd.
	storagePrefix string
}

// Start brings up etcd and kube-apiserver and installs the CRDs. Call Stop
// (tests: register it with t.Cleanup) to shut both down and remove all state.
func Start(opts Options) (cp *ControlPlane, err error) {
	dir, err := os.MkdirTemp("", "koord-controlplane-")
	if err != nil {
		return nil, err
	}
	cp = &ControlPlane{Dir: dir}
	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()

	cp.etcd, err = startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	cp.storagePrefix = "/" + uuid.New().String() + "/registry"
	storage := storagebackend.NewDefaultConfig(cp.storagePrefix, nil)
	storage.Transport.ServerList = []string{"http://" + cp.etcd.Clients[0].Addr().String()}

	flags := []string{
		// Pods in tests and the demo have no ServiceAccount token controller,
		// and nodes are created without conditions.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
	}
	if opts.RBAC {
		flags = append(flags, "--authorization-mode=Node,RBAC")
	}
	cp.server, err = startAPIServer(dir, storage, flags)
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver: %w", err)
	}
	cp.Config = rest.CopyConfig(cp.server.config)
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return nil, err
	}
	if cp.Koord, err = koordclient.New(cp.Config); err != nil {
		return nil, err
	}
	cp.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := WriteKubeconfig(cp.Config, cp.Kubeconfig); err != nil {
		return nil, err
	}
	if err := cp.InstallCRDs(context.Background(), manifests.CRDs); err != nil {
		return nil, err
	}
	return cp, nil
}

// Stop shuts down kube-apiserver and etcd and removes every file they wrote.
func (cp *ControlPlane) Stop() {
	if cp.server != nil {
		cp.server.stop()
		cp.server = nil
	}
	if cp.etcd != nil {
		cp.etcd.Close()
		cp.etcd = nil
	}
	if cp.Dir != "" {
		_ = os.RemoveAll(cp.Dir)
	}
}

// Endpoints are the URLs the control plane listens on, for leak checks.
func (cp *ControlPlane) Endpoints() []string {
	eps := []string{cp.Config.Host}
	if cp.etcd != nil {
		for _, l := range cp.etcd.Clients {
			eps = append(eps, "http://"+l.Addr().String())
		}
		for _, l := range cp.etcd.Peers {
			eps = append(eps, "http://"+l.Addr().String())
		}
	}
	return eps
}

func startEtcd(dir string) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	// etcd logs an error for each listener it closes on shutdown; failures to
	// start are returned by StartEtcd, and later ones surface in kube-apiserver.
	cfg.LogLevel = "fatal"
	// Test data need not survive a power cut; fsync makes every write slow.
	cfg.UnsafeNoFsync = true
	local, _ := url.Parse("http://127.0.0.1:0")
	cfg.ListenClientUrls = []url.URL{*local}
	cfg.AdvertiseClientUrls = []url.URL{*local}
	cfg.ListenPeerUrls = []url.URL{*local}
	cfg.AdvertisePeerUrls = []url.URL{*local}
	cfg.InitialCluster = cfg.Name + "=" + local.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd not ready after 60s")
	}
}

// WriteKubeconfig writes a kubeconfig for a rest.Config (token or client
// certificate auth), so binaries and kubectl can reach the server.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["koord"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify:    cfg.Insecure,
		TLSServerName:            cfg.ServerName,
	}
	kc.AuthInfos["koord"] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts["koord"] = &clientcmdapi.Context{Cluster: "koord", AuthInfo: "koord"}
	kc.CurrentContext = "koord"
	return clientcmd.WriteToFile(*kc, path)
}

// InstallCRDs creates every CRD in fsys and waits until each is established
// and served.
func (cp *ControlPlane) InstallCRDs(ctx context.Context, fsys fs.FS) error {
	client, err := apiextensionsclient.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	files, err := fs.Glob(fsys, "*/*.yaml")
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
		if err := waitEstablished(ctx, client, crd.Name); err != nil {
			return err
		}
	}
	return nil
}

func waitEstablished(ctx context.Context, client apiextensionsclient.Interface, name string) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// SchedulerConfigFile writes a KubeSchedulerConfiguration for this control
// plane: the given YAML with clientConnection pointed at kubeconfig (the admin
// one when empty) and, unless keepLeaderElection, leader election turned off
// (kube-scheduler exits the process when it stops leading).
func (cp *ControlPlane) SchedulerConfigFile(configYAML []byte, kubeconfig string, keepLeaderElection bool) (string, error) {
	cfg := map[string]any{}
	if err := yaml.Unmarshal(configYAML, &cfg); err != nil {
		return "", fmt.Errorf("scheduler config: %w", err)
	}
	if kubeconfig == "" {
		kubeconfig = cp.Kubeconfig
	}
	cc, _ := cfg["clientConnection"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
	}
	cc["kubeconfig"] = kubeconfig
	// The API client, not the scheduler, would otherwise be the bottleneck.
	cc["qps"] = 5000
	cc["burst"] = 10000
	cfg["clientConnection"] = cc
	if !keepLeaderElection {
		cfg["leaderElection"] = map[string]any{"leaderElect": false}
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(cp.Dir, "scheduler-config-*.yaml")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Write(out); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// PutStored writes an object's JSON straight into etcd under the API
// server's key for it (<group>/<resource>/<name> for a cluster-scoped
// custom resource), past every validation: what an object written under an
// older, looser CRD schema looks like to today's readers.
func (cp *ControlPlane) PutStored(ctx context.Context, key string, object []byte) error {
	c := v3client.New(cp.etcd.Server)
	defer c.Close()
	_, err := c.Put(ctx, cp.storagePrefix+"/"+key, string(object))
	return err
}
