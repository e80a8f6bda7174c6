package restapi

import (
	"encoding/json"
	"testing"
	"time"
)

// From flux-core 0.88 in a MiniCluster: what `flux job list-ids` said of two jobs, and what
// `flux jobs --json` printed for the same jobs (the keys compared here).
const (
	listedUnsatisfiable = `{"id": 21189623808, "userid": 0, "urgency": 16, "priority": 16, "t_submit": 1795765758.5595675, "t_depend": 1795765758.5842571, "t_priority": 1795765758.599098, "t_sched": 1795765758.5991323, "t_cleanup": 1795765758.6072068, "t_inactive": 1795765758.6073649, "state": 64, "name": "hostname", "cwd": "/", "ntasks": 2, "ncores": 2, "duration": 0.0, "nnodes": 2, "success": false, "exception_occurred": true, "exception_type": "alloc", "exception_severity": 0, "exception_note": "alloc denied due to type=\"unsatisfiable\"", "result": 2}`
	jobsUnsatisfiable   = `{"t_depend": 1795765758.5842571, "t_priority": 1795765758.599098, "t_sched": 1795765758.5991323, "t_cleanup": 1795765758.6072068, "t_inactive": 1795765758.607365, "duration": 0.0, "name": "hostname", "cwd": "/", "ntasks": 2, "ncores": 2, "nnodes": 2, "priority": 16, "success": false, "result": "FAILED", "id": 21189623808, "t_submit": 1795765758.5595675, "state": "INACTIVE", "username": "root", "userid": 0, "urgency": 16, "status": "FAILED", "returncode": 1, "dependencies": [], "annotations": {}, "exception": {"occurred": true, "severity": 0, "type": "alloc", "note": "alloc denied due to type=\"unsatisfiable\""}}`
	listedCanceled      = `{"id": 33973862400, "userid": 0, "urgency": 16, "priority": 16, "t_submit": 1795765759.32055, "t_depend": 1795765759.3373003, "t_priority": 1795765759.3505683, "t_sched": 1795765759.3505895, "t_run": 1795765759.3572404, "t_cleanup": 1795765760.6730826, "t_inactive": 1795765760.7291901, "state": 64, "name": "sleep", "cwd": "/", "ntasks": 1, "ncores": 1, "duration": 0.0, "nnodes": 1, "ranks": "1", "nodelist": "fs-1", "success": false, "exception_occurred": true, "exception_type": "cancel", "exception_severity": 0, "exception_note": "", "result": 4, "expiration": 9223372036.0, "annotations": {"sched": {"selection_type": "immediate"}}, "waitstatus": 36608}`
	jobsCanceled        = `{"t_depend": 1795765759.3373003, "t_priority": 1795765759.3505683, "t_sched": 1795765759.3505895, "t_run": 1795765759.3572404, "t_cleanup": 1795765760.6730826, "t_inactive": 1795765760.72919, "duration": 0.0, "expiration": 9223372036.0, "name": "sleep", "cwd": "/", "ntasks": 1, "ncores": 1, "nnodes": 1, "priority": 16, "ranks": "1", "nodelist": "fs-1", "success": false, "result": "CANCELED", "waitstatus": 36608, "id": 33973862400, "t_submit": 1795765759.32055, "state": "INACTIVE", "username": "root", "userid": 0, "urgency": 16, "runtime": 1.3158421516418457, "status": "CANCELED", "returncode": 143, "dependencies": [], "annotations": {"sched": {"selection_type": "immediate"}}, "exception": {"occurred": true, "severity": 0, "type": "cancel", "note": ""}}`
)

func TestJobInfoIsWhatFluxJobsPrints(t *testing.T) {
	for name, c := range map[string][2]string{"unsatisfiable": {listedUnsatisfiable, jobsUnsatisfiable}, "canceled": {listedCanceled, jobsCanceled}} {
		var raw, want map[string]any
		if err := json.Unmarshal([]byte(c[0]), &raw); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(c[1]), &want); err != nil {
			t.Fatal(err)
		}
		got := jobInfo(raw, time.Now())
		for k, w := range want {
			if k == "username" { // this machine's name for uid 0 may differ
				continue
			}
			g, _ := json.Marshal(got[k])
			wb, _ := json.Marshal(w)
			if k == "runtime" || k == "t_inactive" {
				if d := got[k].(float64) - w.(float64); d > 1e-4 || d < -1e-4 {
					t.Errorf("%s: %s = %s, flux jobs says %s", name, k, g, wb)
				}
				continue
			}
			if string(g) != string(wb) {
				t.Errorf("%s: %s = %s, flux jobs says %s", name, k, g, wb)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: %s = %v, which flux jobs does not print", name, k, got[k])
			}
		}
	}
}

// A job that has not ended has result, returncode and waitstatus all the same, empty, as the
// reference's job info (flux-core's JobInfo defaults).
func TestRunningJobHasResultKeys(t *testing.T) {
	var raw map[string]any
	running := `{"id": 33973862400, "userid": 0, "urgency": 16, "priority": 16, "t_submit": 1795765759.32055, "t_run": 1795765759.3572404, "state": 16, "name": "sleep", "ntasks": 1, "nnodes": 1, "ranks": "1"}`
	if err := json.Unmarshal([]byte(running), &raw); err != nil {
		t.Fatal(err)
	}
	job := describe(jobInfo(raw, time.Now()))
	for _, k := range []string{"result", "returncode", "waitstatus"} {
		if v, ok := job[k]; !ok || v != "" {
			t.Errorf("%s = %v (present %v), want \"\"", k, v, ok)
		}
	}
	if job["state"] != "RUN" {
		t.Errorf("state %v", job["state"])
	}
	var done map[string]any
	if err := json.Unmarshal([]byte(listedCanceled), &done); err != nil {
		t.Fatal(err)
	}
	job = describe(jobInfo(done, time.Now()))
	if job["result"] != "CANCELED" || job["returncode"] != 143 || job["waitstatus"] != 36608.0 {
		t.Errorf("an ended job's result %v, returncode %v, waitstatus %v", job["result"], job["returncode"], job["waitstatus"])
	}
}
