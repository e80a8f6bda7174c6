# Run by minicluster-autoscale in the lead broker's container (flux python THIS SECONDS [DIR]):
# one Flux handle that prints, every SECONDS, one JSON line with what sizing the MiniCluster and
# its metrics need: the brokers (online, drained, allocated), cores and GPUs, the jobs waiting for
# the scheduler with what each asks for, and job-list's counters. Python because Flux's RPCs are
# reached through its bindings; the decisions are made in Go.
#
# With DIR (the directory the autoscaler shares with the keys container), while the MiniCluster
# grows each waiting job gets the memo user.autoscale saying so, which the chart's default
# `flux jobs` format (FLUX_JOBS_FORMAT_DEFAULT) shows; it is removed once the job leaves the queue,
# and both stay in the job's eventlog (flux job eventlog ID).
import importlib.util
import json
import os
import sys
import time

import flux
import flux.constants
from flux.idset import IDset
from flux.job.list import JobListRPC
from flux.resource.list import resource_list


def load_needs():
    """needs() of validate-brokers-up.py beside this file: one reading of what a jobspec asks."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "validate-brokers-up.py")
    spec = importlib.util.spec_from_file_location("validate_brokers_up", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.needs


needs = load_needs()


def counts(rset):
    return {"nodes": rset.nnodes, "cores": rset.ncores, "gpus": rset.ngpus}


def pending(h, asked):
    """Jobs the scheduler holds (state SCHED) with their needs; asked caches each job's needs."""
    rpc = JobListRPC(
        h,
        "job-list.list",
        {
            "max_entries": 0,
            "attrs": ["priority", "urgency", "queue"],
            "constraint": {"states": [flux.constants.FLUX_JOB_STATE_SCHED]},
        },
    )
    jobs = []
    seen = set()
    for job in rpc.get_jobs():
        jobid = job["id"]
        seen.add(jobid)
        if jobid not in asked:
            try:
                spec = h.rpc("job-info.lookup", {"id": jobid, "keys": ["jobspec"], "flags": 0}).get()
                jobspec = spec["jobspec"]
                if isinstance(jobspec, str):
                    jobspec = json.loads(jobspec)
                asked[jobid] = needs(jobspec.get("resources", []))
            except (OSError, KeyError, ValueError):
                continue
        need = asked[jobid]
        jobs.append(
            {
                "id": jobid,
                "nodes": need.get("node", 0),
                "cores": need.get("core", 0),
                "gpus": need.get("gpu", 0),
                "held": job.get("urgency", 16) == 0 or job.get("priority", 1) == 0,
                "queue": job.get("queue", ""),
            }
        )
    for jobid in list(asked):
        if jobid not in seen:
            del asked[jobid]
    return jobs


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def tell_waiting(h, jobs, directory, told):
    """Memo each waiting job with the growth it waits for; clear the memo of jobs gone from the
    queue. told maps a job to the text it was given."""
    target = read_json(f"{directory}/target.json") or {}
    try:
        with open(f"{directory}/size") as f:
            size = int(f.read().strip())
    except (OSError, ValueError):
        size = 0
    text = None
    if target.get("size", 0) > size > 0:
        text = f"waits for brokers: the MiniCluster grows from {size} to {target['size']}"
    waiting = {job["id"] for job in jobs if not job["held"]}
    for jobid in set(told) | waiting:
        want = text if jobid in waiting else None
        if told.get(jobid) == want:
            continue
        try:
            # Not volatile: the job's eventlog keeps why it waited.
            h.rpc("job-manager.memo", {"id": jobid, "volatile": False, "memo": {"autoscale": want}}).get()
        except OSError:
            pass  # the job ended meanwhile
        if want is None:
            told.pop(jobid, None)
        else:
            told[jobid] = want


def state(h, asked):
    status = h.rpc("resource.status", nodeid=0).get()
    rlist = resource_list(h).get()
    stats = h.rpc("job-list.job-stats", {}).get()
    return {
        "time": time.time(),
        "ranks": len(rlist.all.ranks),
        "online": str(IDset(status["online"])),
        "drain": {r: e.get("reason", "") for r, e in status.get("drain", {}).items()},
        "allocated": str(rlist.allocated.ranks),
        "all": counts(rlist.all),
        "up": counts(rlist.up),
        "busy": counts(rlist.allocated),
        "pending": pending(h, asked),
        "stats": stats,
    }


def main():
    interval = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    directory = sys.argv[2] if len(sys.argv) > 2 else None
    while True:
        try:
            h = flux.Flux()
            break
        except OSError as err:  # the broker is not up yet
            sys.stdout.write(json.dumps({"error": f"connecting to Flux: {err}"}) + "\n")
            sys.stdout.flush()
            time.sleep(interval)
    asked = {}
    told = {}
    # The autoscaler answers a look with a target at once: the waiting jobs are told a moment
    # after each look, not a whole interval later.
    tell_after = min(0.3, interval / 2)
    while True:
        try:
            now = state(h, asked)
            line = json.dumps(now)
        except OSError as err:
            now, line = None, json.dumps({"error": str(err)})
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        time.sleep(tell_after)
        if directory and now:
            try:
                tell_waiting(h, now["pending"], directory, told)
            except OSError:
                pass
        time.sleep(interval - tell_after)


if __name__ == "__main__":
    main()
