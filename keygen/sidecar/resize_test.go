package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/minicluster/minicluster/autoscale/target"
)

func specFields(t *testing.T, f metav1.ManagedFieldsEntry) map[string]any {
	t.Helper()
	set, err := fieldSet(f)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := set["f:spec"].(map[string]any)
	return spec
}

func entry(manager string, op metav1.ManagedFieldsOperationType, raw string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "batch/v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}}
}

func TestResizeAppliesBoundsAndRecordsAnEvent(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "mc", Namespace: "ns"}, Spec: batchv1.JobSpec{Parallelism: ptr.To(int32(1)), Completions: ptr.To(int32(1))}}
	client := fake.NewClientset(job)
	var log bytes.Buffer
	r := &Resizer{Client: client, Namespace: "ns", Job: "mc", Dir: t.TempDir(), MinSize: 1, MaxSize: 6, Log: &log}
	ctx := context.Background()
	if err := r.Apply(ctx, target.Target{Size: 7}); err == nil || !strings.Contains(err.Error(), "outside 1 to 6") {
		t.Fatalf("a target beyond maxSize: %v", err)
	}
	if err := r.Apply(ctx, target.Target{Size: 4, Reason: "1 job waits"}); err != nil {
		t.Fatal(err)
	}
	got, _ := client.BatchV1().Jobs("ns").Get(ctx, "mc", metav1.GetOptions{})
	if *got.Spec.Parallelism != 4 || *got.Spec.Completions != 4 {
		t.Fatalf("parallelism %d, completions %d: want 4 and 4", *got.Spec.Parallelism, *got.Spec.Completions)
	}
	evs, _ := client.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
	if len(evs.Items) != 1 || evs.Items[0].Reason != "Grown" || evs.Items[0].Message != "resized from 1 to 4 brokers: 1 job waits" || evs.Items[0].InvolvedObject.Name != "mc" {
		t.Fatalf("events %+v", evs.Items)
	}
	if err := r.tellSize(ctx); err != nil || target.ReadSize(r.Dir) != 4 {
		t.Fatalf("size told: %d, %v", target.ReadSize(r.Dir), err)
	}
}

func TestHandBackGivesTheSizeToHelmsApply(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "mc", Namespace: "ns", ManagedFields: []metav1.ManagedFieldsEntry{
		entry("helm", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:template":{},"f:completionMode":{}}}`),
		entry(ResizeManager, metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:parallelism":{},"f:completions":{}}}`),
		entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, `{"f:status":{}}`),
	}}}
	client := fake.NewClientset(job)
	if err := HandBack(context.Background(), client, job); err != nil {
		t.Fatal(err)
	}
	got, _ := client.BatchV1().Jobs("ns").Get(context.Background(), "mc", metav1.GetOptions{})
	var managers []string
	for _, f := range got.ManagedFields {
		managers = append(managers, f.Manager)
		if f.Manager == "helm" {
			spec := specFields(t, f)
			if _, ok := spec["f:parallelism"]; !ok {
				b, _ := json.Marshal(spec)
				t.Errorf("helm's apply does not own parallelism: %s", b)
			}
		}
	}
	if strings.Join(managers, ",") != "helm,kube-controller-manager" {
		t.Errorf("managers %v: want the autoscaler's entry gone", managers)
	}
	// Helm 3 (no apply entry): nothing to hand back, nothing changed.
	job3 := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "mc3", Namespace: "ns", ManagedFields: []metav1.ManagedFieldsEntry{
		entry("helm", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:template":{}}}`),
		entry(ResizeManager, metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:parallelism":{}}}`),
	}}}
	client = fake.NewClientset(job3)
	if err := HandBack(context.Background(), client, job3); err != nil {
		t.Fatal(err)
	}
	got, _ = client.BatchV1().Jobs("ns").Get(context.Background(), "mc3", metav1.GetOptions{})
	if len(got.ManagedFields) != 2 {
		t.Errorf("Helm 3's Job changed: %+v", got.ManagedFields)
	}
}
