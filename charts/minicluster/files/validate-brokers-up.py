# A validator plugin of flux-core's job-ingest, loaded by its path ([ingest.validator] plugins
# in broker.toml): a job that fits the MiniCluster's maxSize brokers but not the brokers up now
# is refused at submit, saying to grow the MiniCluster first. Without it, schedulers differ:
# Fluxion's fcfs refuses such a job as unsatisfiable, sched-simple and Fluxion's other policies
# queue it, silently, until a resize that may never come. A job no MiniCluster of maxSize
# brokers could run is left to the feasibility validator, which gives the scheduler's reason.
import errno

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


class Validator(ValidatorPlugin):
    def validate(self, args):
        try:
            status = self.flux.rpc("resource.status", nodeid=0).get()
            r_lite = status["R"]["execution"]["R_lite"]
            online = set(IDset(status["online"]))
        except (OSError, KeyError, ValueError):
            return (0, None)  # no answer: the scheduler decides, as without this plugin
        need = needs(args.jobspec.get("resources", []))
        total, up = capacity(r_lite), capacity(r_lite, online)
        kinds = [k for k in ("node", "core", "gpu") if need.get(k, 0) > 0]
        if any(need[k] > total[k] for k in kinds):
            return (0, None)  # more than maxSize brokers hold: the feasibility validator's
        short = [k for k in kinds if need[k] > up[k]]
        if not short:
            return (0, None)
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
