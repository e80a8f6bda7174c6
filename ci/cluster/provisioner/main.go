// Command provisioner is the local cluster's storage provisioner (ci/cluster/up.sh runs it on
// the host, beside the control plane): it makes a hostPath PersistentVolume, a directory under
// --dir, for each PersistentVolumeClaim of its storage class (--class, the cluster's default),
// bound to that claim at once, and deletes the directory and the volume once the claim is gone.
// Every node of the local cluster shares the host's filesystem, so a volume needs no node
// affinity. It is small on purpose: no quotas, no capacity checks, no expansion.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// Name is the provisioner's name: the StorageClass's provisioner field, and the
// pv.kubernetes.io/provisioned-by annotation of the volumes it makes.
const Name = "minicluster.dev/local-path"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file of the cluster")
	dir := flag.String("dir", "", "directory the volumes are made in (one subdirectory each)")
	class := flag.String("class", "local-path", "storage class whose claims it serves")
	flag.Parse()
	if *kubeconfig == "" || *dir == "" {
		log.Fatal("provisioner: --kubeconfig and --dir are required")
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("provisioner: %v", err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		log.Fatalf("provisioner: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	p := &provisioner{client: client, dir: *dir, class: *class, kick: make(chan struct{}, 1)}
	if err := p.run(ctx); err != nil && ctx.Err() == nil {
		log.Fatalf("provisioner: %v", err)
	}
}

type provisioner struct {
	client kubernetes.Interface
	dir    string
	class  string
	kick   chan struct{} // a claim or volume changed: look again
	claims cache.Indexer
	vols   cache.Indexer
}

// run watches claims and volumes and syncs after every change (and every 30 s).
func (p *provisioner) run(ctx context.Context) error {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(p.client, 30*time.Second)
	claims := factory.Core().V1().PersistentVolumeClaims().Informer()
	vols := factory.Core().V1().PersistentVolumes().Informer()
	kick := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.poke() },
		UpdateFunc: func(any, any) { p.poke() },
		DeleteFunc: func(any) { p.poke() },
	}
	for _, inf := range []cache.SharedIndexInformer{claims, vols} {
		if _, err := inf.AddEventHandler(kick); err != nil {
			return err
		}
	}
	p.claims, p.vols = claims.GetIndexer(), vols.GetIndexer()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), claims.HasSynced, vols.HasSynced) {
		return ctx.Err()
	}
	log.Printf("provisioner %s: serving storage class %s in %s", Name, p.class, p.dir)
	for {
		p.sync(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.kick:
		}
	}
}

func (p *provisioner) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// sync makes a volume for each pending claim of the class and deletes the volumes whose claim
// is gone (phase Released) when their reclaim policy says Delete.
func (p *provisioner) sync(ctx context.Context) {
	for _, o := range p.claims.List() {
		c := o.(*corev1.PersistentVolumeClaim)
		if c.Status.Phase == corev1.ClaimPending && c.Spec.VolumeName == "" && c.DeletionTimestamp == nil &&
			c.Spec.StorageClassName != nil && *c.Spec.StorageClassName == p.class {
			if err := p.provision(ctx, c); err != nil {
				log.Printf("provisioner: claim %s/%s: %v", c.Namespace, c.Name, err)
			}
		}
	}
	for _, o := range p.vols.List() {
		v := o.(*corev1.PersistentVolume)
		if v.Annotations["pv.kubernetes.io/provisioned-by"] != Name || v.DeletionTimestamp != nil ||
			v.Status.Phase != corev1.VolumeReleased || v.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
			continue
		}
		if err := p.remove(ctx, v); err != nil {
			log.Printf("provisioner: volume %s: %v", v.Name, err)
		}
	}
}

// provision makes the directory and a volume bound to the claim.
func (p *provisioner) provision(ctx context.Context, c *corev1.PersistentVolumeClaim) error {
	name := "pvc-" + string(c.UID)
	path := filepath.Join(p.dir, fmt.Sprintf("%s_%s_%s", c.Namespace, c.Name, c.UID))
	// Any user a pod runs as may write there, as on a fresh disk that the pod formats itself.
	if err := os.MkdirAll(path, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o777); err != nil {
		return err
	}
	pathType := corev1.HostPathDirectory
	v := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": Name}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: c.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   c.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              p.class,
			VolumeMode:                    c.Spec.VolumeMode,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace, Name: c.Name, UID: c.UID},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &pathType}},
		},
	}
	_, err := p.client.CoreV1().PersistentVolumes().Create(ctx, v, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		log.Printf("provisioner: volume %s (%s) for claim %s/%s", name, path, c.Namespace, c.Name)
	}
	return err
}

// remove deletes a released volume's directory, then the volume.
func (p *provisioner) remove(ctx context.Context, v *corev1.PersistentVolume) error {
	if hp := v.Spec.HostPath; hp != nil && filepath.Dir(hp.Path) == filepath.Clean(p.dir) {
		if err := os.RemoveAll(hp.Path); err != nil {
			return err
		}
	}
	err := p.client.CoreV1().PersistentVolumes().Delete(ctx, v.Name, metav1.DeleteOptions{})
	if err == nil || apierrors.IsNotFound(err) {
		log.Printf("provisioner: deleted volume %s", v.Name)
		return nil
	}
	return err
}
