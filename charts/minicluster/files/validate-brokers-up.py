# A validator plugin of flux-core's job-ingest, loaded by its path ([ingest.validator] plugins
# in broker.toml): a job that fits the MiniCluster's maxSize brokers but not the brokers up now
# is refused at submit, saying to grow the MiniCluster first. Without it, schedulers differ:
# Fluxion's fcfs refuses such a job as unsatisfiable, sched-simple and Fluxion's other policies
# queue it, silently, until a resize that may never come. A job no MiniCluster of maxSize
# brokers could run is left to the feasibility validator, which gives the scheduler's reason.
import errno
import threading
import time

from flux.idset import IDset
from flux.job.validator import ValidatorPlugin


def needs(resources, factor=1, out=None):
    """The jobspec's total count of each resource type (node, core, gpu, ...)."""
    out = {} if out is None else out
    for res in resources:
        count = res.get("count", 1)
        if isinstance(count, dict):
            count = count.get("min", 1)
        n = factor * count
        out[res["type"]] = out.get(res["type"], 0) + n
        needs(res.get("with", []), n, out)
    return out


def capacity(r_lite, ranks=None):
    """Nodes, cores and GPUs of R's ranks (all, or those in ranks)."""
    have = {"node": 0, "core": 0, "gpu": 0}
    for entry in r_lite:
        n = len([r for r in IDset(entry["rank"]) if ranks is None or r in ranks])
        have["node"] += n
        for kind in ("core", "gpu"):
            if kind in entry.get("children", {}):
                have[kind] += n * len(IDset(entry["children"][kind]))
    return have


# How long a view of the brokers up may accept jobs that fit it without asking the lead again:
# one resource.status RPC per job would cost every small job of an ensemble a round trip and
# the lead the encoding of R. A job that does not fit is refused only after a fresh look, so a
# resize that brought brokers up is never missed; a shrink is seen within this many seconds.
FRESH_SECONDS = 2.0


class Validator(ValidatorPlugin):
    def __init__(self, parser):
        super().__init__(parser)
        self.lock = threading.Lock()
        self.seen = None  # (monotonic time, capacity of all, capacity up)

    def look(self, fresh):
        """(capacity of maxSize brokers, of those up, whether asked now): the cached view unless
        fresh or old; None if no answer."""
        with self.lock:
            if not fresh and self.seen and time.monotonic() - self.seen[0] < FRESH_SECONDS:
                return self.seen[1], self.seen[2], False
            try:
                status = self.flux.rpc("resource.status", nodeid=0).get()
                r_lite = status["R"]["execution"]["R_lite"]
                online = set(IDset(status["online"]))
            except (OSError, KeyError, ValueError):
                return None
            self.seen = (time.monotonic(), capacity(r_lite), capacity(r_lite, online))
            return self.seen[1], self.seen[2], True

    def validate(self, args):
        need = needs(args.jobspec.get("resources", []))
        kinds = [k for k in ("node", "core", "gpu") if need.get(k, 0) > 0]
        for fresh in (False, True):
            seen = self.look(fresh)
            if seen is None:
                return (0, None)  # no answer: the scheduler decides, as without this plugin
            total, up, asked = seen
            if any(need[k] > total[k] for k in kinds):
                return (0, None)  # more than maxSize brokers hold: the feasibility validator's
            short = [k for k in kinds if need[k] > up[k]]
            if not short:
                return (0, None)
            if asked:
                break  # the view that refuses it is already the lead's answer of now
        # The fewest brokers that hold what the job asks for, each broker like the others.
        size = max(-(-need[k] * total["node"] // total[k]) for k in short)
        asked = ", ".join(f"{need[k]} {k}s" for k in short)
        have = ", ".join(f"{up[k]}" for k in short)
        return (
            errno.EINVAL,
            f"this job needs {asked}, and the {up['node']} brokers up have {have}"
            f" (the MiniCluster holds up to {total['node']}): grow it to {size} brokers first"
            f" (helm upgrade RELEASE CHART --reuse-values --set size={size}), wait until they"
            " are up (flux-keygen kube wait), then submit the job again",
        )
