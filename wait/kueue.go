package wait

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Workload is what wait reads of a Kueue Workload: who owns it and its conditions.
type Workload struct {
	metav1.ObjectMeta `json:"metadata"`
	Status            struct {
		Conditions []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

// KueueWorkloads lists the Workloads of a namespace (kueue.x-k8s.io/v1beta2) through rc, a REST
// client at the API server's root (a clientset's Discovery().RESTClient()); a cluster without
// Kueue, or a user who may not list them, gets none.
func KueueWorkloads(rc rest.Interface) func(ctx context.Context, ns string) ([]Workload, error) {
	return func(ctx context.Context, ns string) ([]Workload, error) {
		raw, err := rc.Get().AbsPath("/apis/kueue.x-k8s.io/v1beta2/namespaces", ns, "workloads").DoRaw(ctx)
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("listing Kueue's Workloads in %s: %w", ns, err)
		}
		var list struct {
			Items []Workload `json:"items"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("reading Kueue's Workloads in %s: %w", ns, err)
		}
		return list.Items, nil
	}
}

// exceedsMaxQuota is Kueue's reason (QuotaReserved=False) for a Workload that asks for more
// than its ClusterQueue can ever give (nominal quota plus what it may borrow).
const exceedsMaxQuota = "ExceedsMaxQuota"

// KueueError says that Kueue will never admit the broker Job as it is.
type KueueError struct {
	Job, Workload, Message string
}

func (e KueueError) Error() string {
	return fmt.Sprintf("Kueue will never admit the broker Job %s: its Workload %s asks for more than its ClusterQueue can ever hold (%q); "+
		"resize or install with fewer brokers (size) or smaller resources, or ask for a larger nominalQuota or borrowingLimit of the ClusterQueue (kubectl get workload %s -o yaml shows it)",
		e.Job, e.Workload, e.Message, e.Workload)
}

// neverAdmitted is a KueueError when the broker Job waits for a Workload that can never fit its
// ClusterQueue.
func neverAdmitted(ctx context.Context, client kubernetes.Interface, opts Options, selector string) error {
	jobs, err := client.BatchV1().Jobs(opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector + ",app.kubernetes.io/component=broker"})
	if err != nil {
		return fmt.Errorf("listing the broker Job of %s in %s: %w", selector, opts.Namespace, err)
	}
	if len(jobs.Items) != 1 || jobs.Items[0].Labels[QueueLabel] == "" {
		return nil
	}
	job := jobs.Items[0]
	workloads, err := opts.Workloads(ctx, opts.Namespace)
	if err != nil {
		return err
	}
	for _, w := range workloads {
		owned := false
		for _, o := range w.OwnerReferences {
			owned = owned || o.UID == job.UID
		}
		if !owned {
			continue
		}
		for _, c := range w.Status.Conditions {
			if c.Type == "QuotaReserved" && c.Status == metav1.ConditionFalse && c.Reason == exceedsMaxQuota {
				return KueueError{Job: opts.Namespace + "/" + job.Name, Workload: opts.Namespace + "/" + w.Name, Message: c.Message}
			}
		}
	}
	return nil
}
