# Loaded by `flux modprobe rc1` on every worker (the entrypoint appends its directory to
# FLUX_MODPROBE_PATH_APPEND; a Flux without modprobe ignores it). Both marks go into the
# broker's own rundir, so a Flux instance a job starts in the pod (which inherits the
# environment) marks only its own.
#   - "joined": the broker has joined its parent (rc1 runs only then). Until then a SIGTERM
#     is no use to it, and the entrypoint kills it instead.
#   - A clean-up command, the first step of any stop (the lead's or its own SIGTERM), leaves
#     "stopping": from then on the entrypoint keeps a SIGTERM to itself, because one that
#     reaches the broker in rc3 aborts it and the broker then waits 10 s per loaded module.
import shlex
import sys

from flux.modprobe import task


@task("minicluster-worker", ranks=">0")
def worker(context):
    rundir = context.attr_get("rundir")
    try:
        open(rundir + "/joined", "w").close()
        marker = shlex.quote(rundir + "/stopping")
        context.rpc("runat.push", {"name": "cleanup", "commands": [f": > {marker}"]}).get()
    except Exception as exc:  # never fail rc1 over it: a stop is merely slower
        print(f"minicluster: no joined or stopping mark: {exc}", file=sys.stderr)
