// Package kube is flux-keygen's Kubernetes mode, which the chart's keygen Job runs while the
// broker pods start: it puts the CURVE certificate (in a Secret, or a ConfigMap on request) and
// the munge key Secret of a release into the objects the chart renders without data. Helm
// creates those objects with the release and never renders their data, so the key survives
// upgrades and `helm uninstall` deletes it. An object that does not exist yet (flux-keygen run
// before the chart) is created with Helm's ownership metadata and the chart's labels, so that
// the install adopts it.
//
// It never overwrites a key: an existing object is read back and kept when it is valid (a
// retried Job keeps the key the brokers use), filled when it is the release's object with no
// data yet, and an error, with a way out, otherwise. It needs create on secrets/configmaps and
// get and update on the named objects, nothing more.
package kube

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/minicluster/minicluster/keygen"
)

// Names and sizes the chart relies on (charts/minicluster: curve-secret.yaml, munge-secret.yaml).
const (
	CertKey      = "curve.cert"
	MungeKey     = "munge.key"
	MungeKeySize = 1024

	StorageSecret    = "Secret"
	StorageConfigMap = "ConfigMap"

	chartName = "minicluster"
)

// Options say what to create. The zero values of CurveName, MungeName and Storage are the
// chart's defaults.
type Options struct {
	Release   string
	Namespace string
	// CurveName is the certificate object; default <release>-curve.
	CurveName string
	// Storage is Secret (default: the secret key stays a secret) or ConfigMap.
	Storage string
	// SkipCurve leaves the certificate to the user (chart value curve.existingSecret).
	SkipCurve bool
	// Munge also creates the munge key Secret MungeName (default <release>-munge).
	Munge     bool
	MungeName string
	// APIName, when set, is the Secret of the chart's API credentials (user, token,
	// secret-key), made here so that they never enter Helm's release record.
	APIName string
	// Hostname and Version go into the certificate's metadata; Now is its time (default time.Now).
	Hostname string
	Version  string
	Now      func() time.Time
}

// Result is what happened to one object.
type Result struct {
	Kind, Name string
	Action     string // "created", "filled" or "kept"
}

// Validate fills defaults and checks the options.
func (o *Options) Validate() error {
	if o.Release == "" {
		return errors.New("--release is empty: give the Helm release name")
	}
	if errs := validation.IsDNS1123Subdomain(o.Release); len(errs) > 0 {
		return fmt.Errorf("--release %q is not a valid name: %s", o.Release, errs[0])
	}
	if o.Namespace == "" {
		return errors.New("--namespace is empty: give it or set POD_NAMESPACE (the keygen Job sets it from the downward API)")
	}
	if o.CurveName == "" {
		o.CurveName = o.Release + "-curve"
	}
	if o.MungeName == "" {
		o.MungeName = o.Release + "-munge"
	}
	if o.Storage == "" {
		o.Storage = StorageSecret
	}
	if o.Storage != StorageSecret && o.Storage != StorageConfigMap {
		return fmt.Errorf("--storage %q: want Secret or ConfigMap", o.Storage)
	}
	if o.SkipCurve && !o.Munge && o.APIName == "" {
		return errors.New("nothing to do: --skip-curve without --munge or --api-name")
	}
	for _, n := range []string{o.CurveName, o.MungeName, o.APIName} {
		if n == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			return fmt.Errorf("object name %q is not valid: %s", n, errs[0])
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// Run creates or keeps the certificate object and the munge key Secret, logging each step to log.
func Run(ctx context.Context, client kubernetes.Interface, opts Options, log io.Writer) ([]Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	var results []Result
	if !opts.SkipCurve {
		r, err := ensureCurve(ctx, client, opts, log)
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	if opts.Munge {
		r, err := ensureMunge(ctx, client, opts, log)
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	if opts.APIName != "" {
		r, err := ensureAPI(ctx, client, opts, log)
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	return results, nil
}

// objectMeta carries Helm's ownership metadata and the chart's labels: with them Helm adopts
// the object instead of failing with "exists and cannot be imported into the current release".
func objectMeta(opts Options, name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: opts.Namespace,
		Labels: map[string]string{
			"app.kubernetes.io/managed-by": "Helm",
			"app.kubernetes.io/name":       chartName,
			"app.kubernetes.io/instance":   opts.Release,
			"app.kubernetes.io/component":  component,
		},
		Annotations: map[string]string{
			"meta.helm.sh/release-name":      opts.Release,
			"meta.helm.sh/release-namespace": opts.Namespace,
		},
	}
}

func ensureCurve(ctx context.Context, client kubernetes.Interface, opts Options, log io.Writer) (Result, error) {
	cert, err := keygen.New(keygen.Options{
		Name: opts.Release, Hostname: opts.Hostname, Time: opts.Now(), UserID: os.Getuid(), Version: opts.Version,
	})
	if err != nil {
		return Result{}, err
	}
	data, err := cert.Encode()
	if err != nil {
		return Result{}, err
	}
	o := object{kind: opts.Storage, name: opts.CurveName, opts: opts}
	meta := objectMeta(opts, opts.CurveName, "curve")
	if opts.Storage == StorageConfigMap {
		cms := client.CoreV1().ConfigMaps(opts.Namespace)
		o.create = func() error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{CertKey: string(data)}}, metav1.CreateOptions{})
			return err
		}
		o.get = func() (fetched, error) {
			cm, err := cms.Get(ctx, opts.CurveName, metav1.GetOptions{})
			if err != nil {
				return fetched{}, err
			}
			fill := func() error {
				if cm.Data == nil {
					cm.Data = map[string]string{}
				}
				cm.Data[CertKey] = string(data)
				_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
				return err
			}
			return fetched{meta: cm, data: []byte(cm.Data[CertKey]), fill: fill}, nil
		}
	} else {
		o.create, o.get = secretCreateGet(ctx, client, meta, CertKey, map[string][]byte{CertKey: data})
	}
	o.check = func(existing []byte) (string, error) {
		if len(existing) == 0 {
			return "", fmt.Errorf("it has no %s", CertKey)
		}
		c, err := keygen.Parse(existing)
		if err != nil {
			return "", fmt.Errorf("its %s is not a valid certificate (%w)", CertKey, err)
		}
		return "certificate, public key " + c.PublicText(), nil
	}
	return o.ensure(log, fmt.Sprintf("%s, public key %s", CertKey, cert.PublicText()))
}

func ensureMunge(ctx context.Context, client kubernetes.Interface, opts Options, log io.Writer) (Result, error) {
	key := make([]byte, MungeKeySize)
	if _, err := rand.Read(key); err != nil {
		return Result{}, fmt.Errorf("reading %d random bytes for the munge key: %w", MungeKeySize, err)
	}
	o := object{kind: StorageSecret, name: opts.MungeName, opts: opts}
	o.create, o.get = secretCreateGet(ctx, client, objectMeta(opts, opts.MungeName, "munge"), MungeKey, map[string][]byte{MungeKey: key})
	o.check = func(existing []byte) (string, error) {
		if len(existing) != MungeKeySize {
			return "", fmt.Errorf("its %s is %d bytes, want %d", MungeKey, len(existing), MungeKeySize)
		}
		return fmt.Sprintf("%d-byte munge key", MungeKeySize), nil
	}
	return o.ensure(log, fmt.Sprintf("%s, %d random bytes", MungeKey, MungeKeySize))
}

// The API's credentials: the user the chart's NOTES and docs name, and random token and secret
// key, of the lengths and alphabet the chart made them with before.
const (
	APIUser         = "flux"
	apiTokenLen     = 40
	apiSecretKeyLen = 64
	// FilledBy marks a Secret whose data flux-keygen wrote (the chart then renders none).
	FilledBy = "minicluster.dev/filled-by"
)

func ensureAPI(ctx context.Context, client kubernetes.Interface, opts Options, log io.Writer) (Result, error) {
	token, err := randomAlnum(apiTokenLen)
	if err != nil {
		return Result{}, err
	}
	secretKey, err := randomAlnum(apiSecretKeyLen)
	if err != nil {
		return Result{}, err
	}
	data := map[string][]byte{"user": []byte(APIUser), "token": []byte(token), "secret-key": []byte(secretKey)}
	meta := objectMeta(opts, opts.APIName, "api")
	meta.Annotations[FilledBy] = "flux-keygen"
	o := object{kind: StorageSecret, name: opts.APIName, opts: opts}
	o.create, o.get = secretCreateGet(ctx, client, meta, "token", data)
	o.check = func(existing []byte) (string, error) {
		return "API token", nil
	}
	return o.ensure(log, "the API's user, token and secret key")
}

// randomAlnum draws n letters and digits from crypto/rand, without bias.
func randomAlnum(n int) (string, error) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, 0, n)
	buf := make([]byte, 2*n)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("reading random bytes for the API's credentials: %w", err)
		}
		for _, b := range buf {
			if int(b) < 256/len(alphabet)*len(alphabet) && len(out) < n {
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return string(out), nil
}

// secretCreateGet returns the create and get calls of an Opaque Secret holding data; primary is
// the key whose presence says the Secret is filled.
func secretCreateGet(ctx context.Context, client kubernetes.Interface, meta metav1.ObjectMeta, primary string, data map[string][]byte) (func() error, func() (fetched, error)) {
	secrets := client.CoreV1().Secrets(meta.Namespace)
	create := func() error {
		s := &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, Data: data}
		_, err := secrets.Create(ctx, s, metav1.CreateOptions{})
		return err
	}
	get := func() (fetched, error) {
		s, err := secrets.Get(ctx, meta.Name, metav1.GetOptions{})
		if err != nil {
			return fetched{}, err
		}
		fill := func() error {
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			for k, v := range data {
				s.Data[k] = v
			}
			if v, ok := meta.Annotations[FilledBy]; ok {
				if s.Annotations == nil {
					s.Annotations = map[string]string{}
				}
				s.Annotations[FilledBy] = v
			}
			_, err := secrets.Update(ctx, s, metav1.UpdateOptions{})
			return err
		}
		return fetched{meta: s, data: s.Data[primary], secretType: s.Type, fill: fill}, nil
	}
	return create, get
}

// fetched is what get read back of an existing object.
type fetched struct {
	meta       metav1.Object
	data       []byte
	secretType corev1.SecretType
	// fill writes the new key into this object (an update that fails if it changed since).
	fill func() error
}

// object is one Secret or ConfigMap to create, or to keep when a valid one exists.
type object struct {
	kind, name string
	opts       Options
	create     func() error
	get        func() (fetched, error)
	check      func(existing []byte) (desc string, err error)
}

func (o *object) ensure(log io.Writer, what string) (Result, error) {
	where := fmt.Sprintf("%s %s/%s", o.kind, o.opts.Namespace, o.name)
	// The chart renders the object without data, so it normally exists: read it first, and
	// create it only outside the chart (that needs create rights, which the chart's Role lacks).
	got, err := o.get()
	if apierrors.IsNotFound(err) {
		err = o.create()
		if err == nil {
			fmt.Fprintf(log, "created %s (%s)\n", where, what)
			return Result{Kind: o.kind, Name: o.name, Action: "created"}, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return Result{}, fmt.Errorf("creating %s: %w", where, err)
		}
		got, err = o.get()
	}
	if err != nil {
		return Result{}, fmt.Errorf("reading %s: %w", where, err)
	}
	if err := o.owned(got.meta); err != nil {
		return Result{}, fmt.Errorf("%s already exists and %v; it is never overwritten: %s", where, err, o.recovery(false))
	}
	if got.secretType != "" && got.secretType != corev1.SecretTypeOpaque {
		return Result{}, fmt.Errorf("%s already exists with type %s, the chart needs Opaque; it is never overwritten: %s",
			where, got.secretType, o.recovery(true))
	}
	if len(got.data) == 0 {
		// The chart's own data-less object, created by Helm with the release. The update carries the resourceVersion read above, so a concurrent writer makes it
		// fail rather than lose a key.
		if err := got.fill(); err != nil {
			return Result{}, fmt.Errorf("%s exists without data but writing the key into it failed: %w", where, err)
		}
		fmt.Fprintf(log, "filled %s (%s)\n", where, what)
		return Result{Kind: o.kind, Name: o.name, Action: "filled"}, nil
	}
	desc, err := o.check(got.data)
	if err != nil {
		return Result{}, fmt.Errorf("%s already exists but %v; it is never overwritten: %s", where, err, o.recovery(true))
	}
	fmt.Fprintf(log, "kept %s: it already holds a valid %s (not overwritten)\n", where, desc)
	return Result{Kind: o.kind, Name: o.name, Action: "kept"}, nil
}

// owned checks Helm's ownership metadata: Helm refuses to adopt an object of another release
// (or of none), later and with a less clear message.
func (o *object) owned(obj metav1.Object) error {
	ann := obj.GetAnnotations()
	rel, ns := ann["meta.helm.sh/release-name"], ann["meta.helm.sh/release-namespace"]
	if rel == "" {
		return errors.New("has no Helm ownership annotations (meta.helm.sh/release-name), so this chart's hook did not make it")
	}
	if rel != o.opts.Release || ns != o.opts.Namespace {
		return fmt.Errorf("belongs to release %q in namespace %q, not to %q in %q (annotations meta.helm.sh/release-name, meta.helm.sh/release-namespace)",
			rel, ns, o.opts.Release, o.opts.Namespace)
	}
	return nil
}

// recovery says how to get out: the object is ours but broken, or it is someone else's.
func (o *object) recovery(ours bool) string {
	resource := map[string]string{StorageSecret: "secret", StorageConfigMap: "configmap"}[o.kind]
	del := fmt.Sprintf("kubectl delete %s %s -n %s", resource, o.name, o.opts.Namespace)
	if ours {
		return fmt.Sprintf("delete it (%s) or run `helm uninstall %s -n %s`, then install again", del, o.opts.Release, o.opts.Namespace)
	}
	return fmt.Sprintf("delete it if nothing needs it (%s) or install under another release name", del)
}
