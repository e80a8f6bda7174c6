package restapi

import (
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Flux's job states and results (flux-core's job.h), by the numbers job-list reports.
var (
	stateNames  = map[int]string{1: "NEW", 2: "DEPEND", 4: "PRIORITY", 8: "SCHED", 16: "RUN", 32: "CLEANUP", 64: "INACTIVE"}
	resultNames = map[int]string{1: "COMPLETED", 2: "FAILED", 4: "CANCELED", 8: "TIMEOUT"}
)

const stateInactive = 64

// jobInfo turns a job as job-list reports it (flux job list, list-ids: numbers for state and
// result, the exception in flat keys) into what flux jobs --json prints for it, computed as
// flux-core's JobInfo computes it: state and result by name, status, returncode, runtime,
// username, the exception as an object; empty strings and unset times and limits left out.
// The server asks job-list through flux-core's C commands, which start in milliseconds where
// flux jobs starts Python.
func jobInfo(raw map[string]any, now time.Time) map[string]any {
	job := map[string]any{}
	for k, v := range raw {
		job[k] = v
	}
	num := func(k string) float64 { f, _ := raw[k].(float64); return f }
	state, result := int(num("state")), int(num("result"))
	if name, ok := stateNames[state]; ok {
		job["state"] = name
		job["status"] = name
	}
	if name, ok := resultNames[result]; ok && state == stateInactive {
		job["result"] = name
		job["status"] = name
	} else {
		delete(job, "result")
	}
	if occurred, _ := raw["exception_occurred"].(bool); occurred {
		job["exception"] = map[string]any{"occurred": true, "severity": raw["exception_severity"], "type": raw["exception_type"], "note": raw["exception_note"]}
	} else {
		job["exception"] = map[string]any{"occurred": false}
	}
	for _, k := range []string{"exception_occurred", "exception_severity", "exception_type", "exception_note"} {
		delete(job, k)
	}
	if ws, ok := raw["waitstatus"].(float64); ok {
		status := syscall.WaitStatus(int(ws))
		switch {
		case status.Signaled():
			job["returncode"] = -int(status.Signal())
		case status.Exited():
			job["returncode"] = status.ExitStatus()
		}
	} else if state == stateInactive && result == 4 {
		job["returncode"] = -128 // canceled before it ran
	} else if state == stateInactive && result == 2 {
		job["returncode"] = 1 // an exception before it ran
	}
	switch run, cleanup := num("t_run"), num("t_cleanup"); {
	case run > 0 && cleanup > 0:
		job["runtime"] = cleanup - run
	case run > 0:
		job["runtime"] = float64(now.UnixNano())/1e9 - run
	}
	if uid, ok := raw["userid"].(float64); ok {
		if u, err := user.LookupId(strconv.Itoa(int(uid))); err == nil {
			job["username"] = u.Username
		}
	}
	if _, ok := job["dependencies"]; !ok {
		job["dependencies"] = []any{}
	}
	if _, ok := job["annotations"]; !ok {
		job["annotations"] = map[string]any{}
	}
	for k, v := range job {
		if s, ok := v.(string); ok && s == "" {
			delete(job, k)
		}
		if f, ok := v.(float64); ok && f == 0 && (strings.HasPrefix(k, "t_") || k == "runtime" || k == "expiration") {
			delete(job, k)
		}
	}
	return job
}
