package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/minicluster/minicluster/autoscale/target"
)

// ResizeManager is the field manager of the Resizer's changes to the Job.
const ResizeManager = "minicluster-autoscale"

// Resizer applies the autoscaler's targets to the broker Job. It runs in the lead's keys
// container, the one container of the pod with Kubernetes credentials: the autoscaler, in the
// broker's container, asks through a file in Dir (target.File), and the Resizer writes
// the Job's parallelism back (target.SizeFile).
type Resizer struct {
	Client           kubernetes.Interface
	Namespace, Job   string
	Dir              string
	MinSize, MaxSize int
	// Every is how often the target file and the Job are read.
	Every time.Duration
	Log   io.Writer

	applied int64 // the Seq of the last target applied
}

// Run applies targets until ctx ends.
func (r *Resizer) Run(ctx context.Context) {
	// The broker's container writes its targets here, as whatever user it runs as.
	err := os.MkdirAll(r.Dir, 0o755)
	if err == nil {
		err = os.Chmod(r.Dir, 0o1777)
	}
	if err != nil {
		fmt.Fprintf(r.Log, "flux-keygen: autoscale: %v\n", err)
		return
	}
	refresh := 0
	for {
		if refresh == 0 {
			if err := r.tellSize(ctx); err != nil {
				fmt.Fprintf(r.Log, "flux-keygen: autoscale: %v\n", err)
			}
			refresh = 5 // the Job's size is read every 5 looks, and after each resize
		}
		refresh--
		if t, ok := target.Read(r.Dir); ok && t.Seq != r.applied {
			r.applied = t.Seq
			if err := r.Apply(ctx, t); err != nil {
				fmt.Fprintf(r.Log, "flux-keygen: autoscale: %v\n", err)
			}
			refresh = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.Every):
		}
	}
}

// tellSize writes the Job's parallelism into Dir for the autoscaler.
func (r *Resizer) tellSize(ctx context.Context) error {
	job, err := r.Client.BatchV1().Jobs(r.Namespace).Get(ctx, r.Job, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the Job %s: %w", r.Job, err)
	}
	if job.Spec.Parallelism == nil {
		return errors.New("the Job has no parallelism")
	}
	return target.WriteSize(r.Dir, int(*job.Spec.Parallelism))
}

// Apply resizes the Job to t.Size (parallelism and completions together: an elastic indexed
// Job), hands the two fields back to Helm (HandBack), and records an Event on the Job.
func (r *Resizer) Apply(ctx context.Context, t target.Target) error {
	if t.Size < r.MinSize || t.Size > r.MaxSize {
		return fmt.Errorf("a target of %d brokers is outside %d to %d: ignored", t.Size, r.MinSize, r.MaxSize)
	}
	jobs := r.Client.BatchV1().Jobs(r.Namespace)
	job, err := jobs.Get(ctx, r.Job, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the Job %s: %w", r.Job, err)
	}
	from := 0
	if job.Spec.Parallelism != nil {
		from = int(*job.Spec.Parallelism)
	}
	if from == t.Size {
		return nil
	}
	patch := fmt.Sprintf(`{"spec":{"parallelism":%d,"completions":%d}}`, t.Size, t.Size)
	job, err = jobs.Patch(ctx, r.Job, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: ResizeManager})
	if err != nil {
		return fmt.Errorf("resizing the Job %s from %d to %d brokers: %w", r.Job, from, t.Size, err)
	}
	// The Job controller writes the Job's status all the while: a hand-back that met a newer
	// version is tried again on it.
	for try := 0; ; try++ {
		err := HandBack(ctx, r.Client, job)
		if err == nil {
			break
		}
		if !apierrors.IsConflict(errors.Unwrap(err)) || try == 4 {
			fmt.Fprintf(r.Log, "flux-keygen: autoscale: %v\n", err)
			break
		}
		if job, err = jobs.Get(ctx, r.Job, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("reading the Job %s: %w", r.Job, err)
		}
	}
	reason := "Grown"
	if t.Size < from {
		reason = "Shrunk"
	}
	msg := fmt.Sprintf("resized from %d to %d brokers: %s", from, t.Size, t.Reason)
	fmt.Fprintf(r.Log, "flux-keygen: autoscale: %s\n", msg)
	return r.event(ctx, job, reason, msg)
}

func (r *Resizer) event(ctx context.Context, job *batchv1.Job, reason, msg string) error {
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: job.Name + "-", Namespace: r.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Name: job.Name,
			Namespace: r.Namespace, UID: job.UID, ResourceVersion: job.ResourceVersion},
		Reason: reason, Message: msg, Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: ResizeManager},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "minicluster.dev/autoscale", ReportingInstance: os.Getenv("HOSTNAME"),
	}
	if _, err := r.Client.CoreV1().Events(r.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("recording the resize as an Event: %w", err)
	}
	return nil
}

// HandBack gives the ownership of the Job's parallelism and completions back to the manager that
// applied the Job with server-side apply (Helm 4), so that Helm stays the owner of the size: a
// later helm upgrade that sets another size then changes it without a field-manager conflict.
// Under Helm 3 (no apply) there is nothing to hand back. Only the fields' ownership changes.
func HandBack(ctx context.Context, client kubernetes.Interface, job *batchv1.Job) error {
	fields := job.ManagedFields
	owner := -1
	for i, f := range fields {
		if f.Operation == metav1.ManagedFieldsOperationApply && owns(f, "f:template") {
			owner = i
		}
	}
	if owner < 0 {
		return nil
	}
	changed := false
	out := make([]metav1.ManagedFieldsEntry, 0, len(fields))
	for i, f := range fields {
		switch {
		case i == owner:
			if err := addSize(&f); err != nil {
				return err
			}
		case f.Manager == ResizeManager:
			empty, err := dropSize(&f)
			if err != nil {
				return err
			}
			changed = true
			if empty {
				continue
			}
		}
		out = append(out, f)
	}
	if !changed {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"managedFields": out, "resourceVersion": job.ResourceVersion}})
	if err != nil {
		return err
	}
	if _, err := client.BatchV1().Jobs(job.Namespace).Patch(ctx, job.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: ResizeManager}); err != nil {
		return fmt.Errorf("handing the Job's size back to %s: %w", fields[owner].Manager, err)
	}
	return nil
}

// owns reports whether entry f owns spec.<field>.
func owns(f metav1.ManagedFieldsEntry, field string) bool {
	set, err := fieldSet(f)
	if err != nil {
		return false
	}
	spec, _ := set["f:spec"].(map[string]any)
	_, ok := spec[field]
	return ok
}

func fieldSet(f metav1.ManagedFieldsEntry) (map[string]any, error) {
	set := map[string]any{}
	if f.FieldsV1 == nil {
		return set, nil
	}
	if err := json.Unmarshal(f.FieldsV1.Raw, &set); err != nil {
		return nil, fmt.Errorf("the managed fields of %s: %w", f.Manager, err)
	}
	return set, nil
}

// dropSize removes spec.parallelism and spec.completions from f; empty says f owns nothing then.
func dropSize(f *metav1.ManagedFieldsEntry) (empty bool, err error) {
	return editSize(f, func(spec map[string]any) {
		delete(spec, "f:parallelism")
		delete(spec, "f:completions")
	})
}

// addSize adds spec.parallelism and spec.completions to f.
func addSize(f *metav1.ManagedFieldsEntry) error {
	_, err := editSize(f, func(spec map[string]any) {
		spec["f:parallelism"] = map[string]any{}
		spec["f:completions"] = map[string]any{}
	})
	return err
}

func editSize(f *metav1.ManagedFieldsEntry, edit func(spec map[string]any)) (bool, error) {
	set, err := fieldSet(*f)
	if err != nil {
		return false, err
	}
	spec, _ := set["f:spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	edit(spec)
	if len(spec) == 0 {
		delete(set, "f:spec")
	} else {
		set["f:spec"] = spec
	}
	raw, err := json.Marshal(set)
	if err != nil {
		return false, err
	}
	f.FieldsV1 = &metav1.FieldsV1{Raw: raw}
	return len(set) == 0, nil
}
