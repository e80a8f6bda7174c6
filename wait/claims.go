package wait

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ClaimError says that a PersistentVolumeClaim the broker pods mount (flux.state) can never
// be bound as it is: it or its storage class does not exist.
type ClaimError struct {
	Claim, Reason string
}

func (e ClaimError) Error() string { return "PersistentVolumeClaim " + e.Claim + " " + e.Reason }

// claims looks at the claims the broker pods mount and says why one of them stays Pending
// (empty when none does). A claim or storage class that does not exist is a ClaimError: no
// volume will ever come. A user who may not read storage classes or events gets less detail.
func claims(ctx context.Context, client kubernetes.Interface, ns string, pods []corev1.Pod) (string, error) {
	var names []string
	for _, p := range pods {
		for _, v := range p.Spec.Volumes {
			if c := v.PersistentVolumeClaim; c != nil && !slices.Contains(names, c.ClaimName) {
				names = append(names, c.ClaimName)
			}
		}
	}
	slices.Sort(names)
	var pending []string
	for _, name := range names {
		c, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "", ClaimError{Claim: ns + "/" + name, Reason: "does not exist, and the broker pods mount it: create it, or set flux.state.existingClaim to a claim of namespace " + ns + " (kubectl get pvc -n " + ns + ")"}
		}
		if err != nil {
			return "", fmt.Errorf("reading PersistentVolumeClaim %s/%s: %w", ns, name, err)
		}
		if c.Status.Phase != corev1.ClaimPending {
			continue
		}
		why, err := claimPending(ctx, client, c)
		if err != nil {
			return "", err
		}
		pending = append(pending, fmt.Sprintf("PersistentVolumeClaim %s Pending: %s", name, why))
	}
	return strings.Join(pending, "; "), nil
}

// deleteFirst is the fix for a claim the chart made and keeps: its class cannot change.
func deleteFirst(c *corev1.PersistentVolumeClaim) string {
	return fmt.Sprintf("set flux.state.storageClassName to a class that kubectl get storageclass lists (a claim's class cannot change: kubectl delete pvc -n %s %s first)", c.Namespace, c.Name)
}

// claimPending says why a Pending claim has no volume yet, from its storage class and the
// events about it.
func claimPending(ctx context.Context, client kubernetes.Interface, c *corev1.PersistentVolumeClaim) (string, error) {
	class := ""
	if c.Spec.StorageClassName != nil {
		class = *c.Spec.StorageClassName
	}
	provisioner := ""
	if class != "" {
		sc, err := client.StorageV1().StorageClasses().Get(ctx, class, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return "", ClaimError{Claim: c.Namespace + "/" + c.Name, Reason: fmt.Sprintf("asks for storage class %q, which does not exist, so no volume will come: %s", class, deleteFirst(c))}
		case err == nil:
			provisioner = sc.Provisioner
		}
	}
	// The newest event about the claim from the volume controller says what it waits for.
	var last *corev1.Event
	if events, err := client.CoreV1().Events(c.Namespace).List(ctx, metav1.ListOptions{}); err == nil {
		for i, e := range events.Items {
			if e.InvolvedObject.Kind == "PersistentVolumeClaim" && e.InvolvedObject.Name == c.Name &&
				(last == nil || eventTime(e).After(eventTime(*last))) {
				last = &events.Items[i]
			}
		}
	}
	switch {
	case class == "":
		return "it names no storage class and the cluster has no default one, so only a PersistentVolume made by hand can bind it; " + deleteFirst(c), nil
	case last != nil && last.Reason == "ProvisioningFailed":
		return fmt.Sprintf("the provisioner of storage class %s failed: %q", class, last.Message), nil
	case last != nil && last.Reason == "WaitForFirstConsumer":
		return fmt.Sprintf("storage class %s makes the volume once a pod using it is scheduled", class), nil
	case provisioner != "":
		return fmt.Sprintf("no volume from provisioner %s of storage class %s yet: if no such provisioner runs in the cluster, none will come; %s", provisioner, class, deleteFirst(c)), nil
	case last != nil:
		return fmt.Sprintf("%s: %s", last.Reason, last.Message), nil
	}
	return "no volume yet", nil
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
