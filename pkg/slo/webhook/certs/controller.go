package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Options say where the certificate lives and who writes it.
type Options struct {
	// Namespace and SecretName locate the Secret.
	Namespace, SecretName string
	// SelfManaged: the leader issues and renews the certificate and writes
	// the CA bundle into the webhook configurations. Off, cert-manager does
	// both and this package only serves what the Secret holds.
	SelfManaged bool
	// Hosts are the serving certificate's names: the Service's DNS names,
	// or an IP address when the API server calls a URL.
	Hosts []string
	// Validity is the serving certificate's lifetime (the CA's is ten times
	// that); it is renewed when a third is left.
	Validity time.Duration
	// MutatingConfigurations and ValidatingConfigurations are the webhook
	// configurations whose caBundle the leader keeps current.
	MutatingConfigurations, ValidatingConfigurations []string
	// Recorder, when set, gets an Event on the Secret at each renewal.
	Recorder record.EventRecorder
}

// Provider serves the Secret's current certificate to every TLS handshake.
type Provider struct {
	cur    atomic.Pointer[tls.Certificate]
	expiry prometheus.Gauge
}

// GetCertificate is the webhook server's tls.Config.GetCertificate.
func (p *Provider) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := p.cur.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("no webhook serving certificate yet")
}

// Ready fails until a certificate is loaded: a replica without one is kept
// out of the Service rather than failing handshakes.
func (p *Provider) Ready(*http.Request) error {
	_, err := p.GetCertificate(nil)
	return err
}

func (p *Provider) load(obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	c, err := Serving(s.Data)
	if err != nil {
		ctrl.Log.V(2).Info("Webhook certificate Secret holds no usable certificate yet", "secret", s.Namespace+"/"+s.Name, "error", err.Error())
		return
	}
	if old := p.cur.Load(); old != nil && bytes.Equal(old.Certificate[0], c.Certificate[0]) {
		return
	}
	p.cur.Store(c)
	if c.Leaf != nil {
		p.expiry.Set(float64(c.Leaf.NotAfter.Unix()))
		ctrl.Log.Info("Serving the webhook certificate", "serial", c.Leaf.SerialNumber.String(), "notAfter", c.Leaf.NotAfter)
	}
}

// Setup has p serve the Secret's certificate as it changes (the manager's
// cache must be limited to that Secret) and, when SelfManaged, adds the
// leader's renewal loop.
func Setup(ctx context.Context, mgr manager.Manager, p *Provider, o Options, reg prometheus.Registerer) error {
	p.expiry = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "koord_manager_webhook_certificate_expiry_timestamp_seconds",
		Help: "When the webhook serving certificate this replica serves expires (Unix time).",
	})
	if err := reg.Register(p.expiry); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return err
		}
		p.expiry = are.ExistingCollector.(prometheus.Gauge)
	}
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return err
	}
	r := &renewer{o: o, c: mgr.GetClient(), live: mgr.GetAPIReader(), kick: make(chan struct{}, 1)}
	kick := func(any) {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.load(obj); kick(obj) },
		UpdateFunc: func(_, obj any) { p.load(obj); kick(obj) },
		DeleteFunc: kick,
	}); err != nil {
		return err
	}
	if o.SelfManaged {
		return mgr.Add(r)
	}
	return nil
}

// renewer is the leader's loop: keep the Secret's certificates current and
// the webhook configurations' caBundle equal to its CA bundle.
type renewer struct {
	o    Options
	c    client.Client
	live client.Reader
	kick chan struct{}
	// waiting: none of the configurations exists yet.
	waiting bool
}

func (r *renewer) NeedLeaderElection() bool { return true }

func (r *renewer) period() time.Duration {
	p := r.o.Validity / 10
	if p > time.Minute {
		p = time.Minute
	}
	if p < time.Second {
		p = time.Second
	}
	return p
}

func (r *renewer) Start(ctx context.Context) error {
	for {
		wait := r.period()
		if err := r.sync(ctx, time.Now()); err != nil && ctx.Err() == nil {
			ctrl.Log.Error(err, "Keeping the webhook certificate current; retrying", "secret", r.o.Namespace+"/"+r.o.SecretName)
			wait = min(wait, 5*time.Second)
		} else if r.waiting {
			// Installed together with its configurations: they come soon.
			wait = min(wait, 5*time.Second)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		case <-r.kick:
			t.Stop()
		}
	}
}

// sync renews the certificate when due and writes the CA bundle into the
// webhook configurations. The Secret is owned by the configurations it
// serves: when an uninstall deletes them, the garbage collector deletes it,
// and while none exists (being uninstalled) no new one is written.
func (r *renewer) sync(ctx context.Context, now time.Time) error {
	configs, err := r.configurations(ctx)
	if err != nil {
		return err
	}
	r.waiting = len(configs) == 0 && len(r.o.MutatingConfigurations)+len(r.o.ValidatingConfigurations) > 0
	if r.waiting {
		ctrl.Log.V(2).Info("No webhook configuration to serve; not writing a certificate", "mutating", r.o.MutatingConfigurations, "validating", r.o.ValidatingConfigurations)
		return nil
	}
	key := types.NamespacedName{Namespace: r.o.Namespace, Name: r.o.SecretName}
	s := &corev1.Secret{}
	err = r.live.Get(ctx, key, s)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	data, reason, err := Renew(s.Data, r.o.Hosts, r.o.Validity, now)
	if err != nil {
		return err
	}
	var owners []metav1.OwnerReference
	for _, c := range configs {
		gvk := c.obj.GetObjectKind().GroupVersionKind()
		owners = append(owners, metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: c.obj.GetName(), UID: c.obj.GetUID()})
	}
	if reason != "" || !equality.Semantic.DeepEqual(owners, s.OwnerReferences) {
		if !exists {
			s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "koord-manager"}}, Type: corev1.SecretTypeTLS}
		}
		s.Data, s.OwnerReferences = data, owners
		if exists {
			err = r.c.Update(ctx, s)
		} else {
			err = r.c.Create(ctx, s)
		}
		if err != nil {
			// A conflict means another writer got there first: the next
			// round reads its result.
			return err
		}
		if reason != "" {
			ctrl.Log.Info("Webhook certificate written", "secret", key.String(), "reason", reason)
			if r.o.Recorder != nil {
				r.o.Recorder.Eventf(s, corev1.EventTypeNormal, "CertificateRenewed", "koord-manager wrote the webhook certificate: %s", reason)
			}
		}
	}
	var errs []error
	for _, c := range configs {
		changed := false
		for _, b := range c.bundles {
			if !bytes.Equal(*b, data[KeyCACert]) {
				*b, changed = data[KeyCACert], true
			}
		}
		if changed {
			errs = append(errs, r.c.Update(ctx, c.obj))
		}
	}
	return errors.Join(errs...)
}

// configuration is a webhook configuration with its webhooks' caBundles.
type configuration struct {
	obj     client.Object
	bundles []*[]byte
}

// configurations reads the named webhook configurations that exist.
func (r *renewer) configurations(ctx context.Context) ([]configuration, error) {
	var out []configuration
	get := func(name string, obj client.Object, kind string) (bool, error) {
		err := r.live.Get(ctx, types.NamespacedName{Name: name}, obj)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		obj.GetObjectKind().SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind(kind))
		return err == nil, err
	}
	for _, name := range r.o.MutatingConfigurations {
		c := &admissionregistrationv1.MutatingWebhookConfiguration{}
		ok, err := get(name, c, "MutatingWebhookConfiguration")
		if err != nil {
			return nil, err
		}
		if ok {
			cfg := configuration{obj: c}
			for i := range c.Webhooks {
				cfg.bundles = append(cfg.bundles, &c.Webhooks[i].ClientConfig.CABundle)
			}
			out = append(out, cfg)
		}
	}
	for _, name := range r.o.ValidatingConfigurations {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		ok, err := get(name, c, "ValidatingWebhookConfiguration")
		if err != nil {
			return nil, err
		}
		if ok {
			cfg := configuration{obj: c}
			for i := range c.Webhooks {
				cfg.bundles = append(cfg.bundles, &c.Webhooks[i].ClientConfig.CABundle)
			}
			out = append(out, cfg)
		}
	}
	return out, nil
}
