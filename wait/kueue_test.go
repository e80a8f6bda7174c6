package wait

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// KueueWorkloads reads the API server's list of Workloads (the JSON of kueue.x-k8s.io/v1beta2)
// through a clientset's discovery REST client; a cluster without Kueue (404) has none.
func TestKueueWorkloadsReadsTheList(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"WorkloadList","items":[{"metadata":{"name":"job-mc-1a2b",
			"ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"mc","uid":"u1"}]},
			"status":{"conditions":[{"type":"QuotaReserved","status":"False","reason":"ExceedsMaxQuota","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}]}`))
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	list := KueueWorkloads(client.Discovery().RESTClient())
	ws, err := list(context.Background(), "ns")
	if err != nil || len(ws) != 1 || ws[0].Name != "job-mc-1a2b" || ws[0].OwnerReferences[0].UID != "u1" ||
		len(ws[0].Status.Conditions) != 1 || ws[0].Status.Conditions[0].Reason != exceedsMaxQuota {
		t.Errorf("got %+v, %v", ws, err)
	}
	if ws, err := list(context.Background(), "other"); err != nil || ws != nil {
		t.Errorf("no such resource (404): got %+v, %v; want none and no error", ws, err)
	}
}
