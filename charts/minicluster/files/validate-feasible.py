# A validator plugin of flux-core's job-ingest, loaded by its path ([ingest.validator] plugins in
# broker.toml) in place of flux-core's "feasibility": the same feasibility.check RPC to the
# scheduler, asked once for each shape of request rather than once for each job. The scheduler
# judges a request against the whole R file (all maxSize brokers, as if up), which does not
# change while the instance runs, so a shape found feasible stays feasible; an ensemble of a
# thousand jobs of one shape costs one round trip to the scheduler, not a thousand. A refusal is
# not remembered: the next job of that shape asks again and gets the scheduler's own reason.
import errno
import json
import threading

from flux.job.validator import ValidatorPlugin

# What the scheduler's feasibility check reads of a jobspec: its resources, and of its system
# attributes those that place or bound a job. The command, environment and the rest do not
# change its answer.
SYSTEM_KEYS = ("constraints", "queue", "duration")

# Shapes remembered; past this many distinct ones (a sweep over sizes) the memory starts again.
MAX_SHAPES = 4096


def shape(jobspec):
    """The part of a jobspec the scheduler's feasibility check depends on, as a key."""
    system = jobspec.get("attributes", {}).get("system", {})
    return json.dumps(
        [jobspec.get("resources"), [system.get(k) for k in SYSTEM_KEYS]],
        sort_keys=True,
    )


class Validator(ValidatorPlugin):
    def __init__(self, parser):
        super().__init__(parser)
        self.lock = threading.Lock()
        self.feasible = set()

    def validate(self, args):
        key = shape(args.jobspec)
        with self.lock:
            if key in self.feasible:
                return (0, None)
        try:
            self.flux.rpc("feasibility.check", args.jobinfo).get()
        except OSError as err:
            if err.errno == errno.ENOSYS:
                return (0, None)  # no feasibility service loaded: as flux-core's plugin does
            return (err.errno, err.strerror)
        with self.lock:
            if len(self.feasible) >= MAX_SHAPES:
                self.feasible.clear()
            self.feasible.add(key)
        return (0, None)
