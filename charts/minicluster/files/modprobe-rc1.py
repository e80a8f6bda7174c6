# Loaded by `flux modprobe rc1` on every broker, the lead too (the entrypoint appends its
# directory to FLUX_MODPROBE_PATH_APPEND; a Flux without modprobe ignores it); the first two
# marks are a worker's alone (ranks >0). Everything goes into the broker's own rundir, so a Flux
# instance a job starts in the pod (which inherits the environment) marks only its own.
#   - "joined": a worker has joined its parent (rc1 runs only then). Until then a SIGTERM
#     is no use to it, and the entrypoint kills it instead.
#   - A clean-up command, the first step of any stop (the lead's or its own SIGTERM), leaves
#     "stopping": from then on the entrypoint keeps a SIGTERM to itself, because one that
#     reaches the broker in rc3 aborts it and the broker then waits 10 s per loaded module.
#   - "online.fifo" (every broker): once rc1 is done, a process forked off this one (Python is
#     already running here) asks the broker to say when it reaches Flux's run state and writes
#     "run" to that FIFO, which the entrypoint holds and reads: the broker's readiness, without
#     a Flux command every fraction of a second while the instance waits for its quorum.
#   - "rc3-plan" (every broker, the lead too): the steps `flux modprobe rc3` would take there,
#     for rc3.sh, which takes them without starting Python (Flux's Python rc3 spends most of its
#     time starting Python, little removing modules). Written only where every
#     step is known; otherwise rc3 runs as Flux ships it.
import ast
import os
import shlex
import sys
from pathlib import Path

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


def rc3_plan(context):
    try:
        # rc1's last task: the entrypoint waits for "run" on online.fifo from now on.
        rundir = context.attr_get("rundir")
        open(rundir + "/rc1-done", "w").close()
        say_when_running(rundir)
    except Exception as exc:
        print(f"minicluster: no rc1-done mark, or no word of the run state: {exc}", file=sys.stderr)
    try:
        plan = rc3_steps(context)
        if plan is None:
            return
        path = context.attr_get("rundir") + "/rc3-plan"
        with open(path + ".tmp", "w") as f:
            f.write("".join(f"{action} {arg}\n" for action, arg in plan))
        os.rename(path + ".tmp", path)
    except Exception as exc:  # any Flux this code does not know: the Python rc3 runs
        print(f"minicluster: rc3 runs as Flux ships it: {exc}", file=sys.stderr)


def say_when_running(rundir):
    """Forks a process that writes "run" to rundir/online.fifo once the broker is in its run
    state (state-machine.wait), or "poll" where it cannot tell: the entrypoint then asks Flux
    itself. Only where the entrypoint made the FIFO (a Flux instance a job starts in the pod has
    a rundir of its own). The child lets go of rc1's output at once: the broker waits for its
    end before rc1 is done."""
    fifo = rundir + "/online.fifo"
    if not os.path.exists(fifo):
        return

    def say(word):
        # The entrypoint holds the FIFO open for reading and writing: this never blocks.
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, (word + "\n").encode())
        finally:
            os.close(fd)

    try:
        import flux

        pid = os.fork()
    except Exception:
        say("poll")
        raise
    if pid != 0:
        return
    said = "poll"
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, 65536)  # rc1's own connection to the broker among them
        flux.Flux().rpc("state-machine.wait").get()
        said = "run"
    except BaseException:
        pass
    finally:
        try:
            say(said)
        finally:
            os._exit(0)


try:  # last, once every module is loaded; a modprobe that refuses this runs its own rc3
    rc3_plan_task = task("minicluster-rc3-plan", after=["*"])(rc3_plan)
except Exception as exc:
    print(f"minicluster: rc3 runs as Flux ships it: {exc}", file=sys.stderr)


# The tasks of flux-core's rc3.py other than its modules' removal, as commands.
COMMANDS = {
    "post-finish-event": "flux startlog --post-finish-event",
    "content-flush": "flux content flush",
}


def rc3_steps(context):
    """The steps of `flux modprobe rc3` on this broker: the rc3.d scripts, then its tasks and
    the removal of every loaded module modprobe knows (each removed before the modules it was
    loaded after), in an order that keeps every task's before and after."""
    # Imported here: a Flux whose modprobe lacks it still loads this file (and runs rc3 itself).
    from flux.modprobe import rank_conditional

    rank = int(context.attr_get("rank"))
    # One module.list for all: the built-ins, and the others with the services they provide.
    mods = context.rpc("module.list").get()["mods"]
    builtins = [m["name"] for m in mods if m["path"] == "builtin"]
    service = {s: m["name"] for m in mods if m["path"] != "builtin" for s in m["services"]}
    # Flux's rc3 removes the modules it has a task for on this rank; it leaves the rest.
    known = [m["name"] for m in mods if m["path"] != "builtin" and context.modprobe.has_task(m["name"])]
    loaded = [name for name in known if context.modprobe.get_task(name).ranks.test(rank)]

    def node(name):
        if name in commands:
            return name
        found = service.get(name, name)
        return found if found in loaded else None

    commands = {}
    first = {name: set() for name in loaded}  # first[a]: the steps that come after a
    for path in context.modprobe.loader.get_rc_files("rc3"):
        for t in rc3_tasks(path):
            if t["name"] == "run-all-rc3" or not rank_conditional(t["ranks"]).test(rank):
                continue
            if any(a.startswith("!") for a in t["needs_attrs"]):
                raise ValueError(f"{path}: task {t['name']} needs {t['needs_attrs']}")
            if any(context.attr_get(a) is None for a in t["needs_attrs"]):
                continue
            if t["needs_attrs"]:  # content-dump (flux.state): Flux's own rc3 does it
                return None
            if t["name"] not in COMMANDS or t["needs_config"] or t["needs_env"]:
                raise ValueError(f"{path}: task {t['name']} is not known here")
            if all(node(n) for n in t["needs"]):
                commands[t["name"]] = t
                first[t["name"]] = set()
    for name in loaded:
        t = context.modprobe.get_task(name)
        for other in map(node, t.after):  # loaded after other: removed before it
            if other and other != name:
                first[name].add(other)
        for other in map(node, t.before):
            if other and other != name:
                first[other].add(name)
    for name, t in commands.items():
        for other in map(node, t["before"]):
            if other:
                first[name].add(other)
        for other in map(node, t["after"]):
            if other:
                first[other].add(name)
    waiting = dict.fromkeys(first, 0)
    for name in first:
        for other in first[name]:
            waiting[other] += 1
    # Rounds of steps that wait for nothing but the rounds before: rc3.sh runs each round's
    # steps at once, as modprobe would.
    plan = [("run", script) for script in rc3d_scripts()]
    ready = sorted(name for name in first if waiting[name] == 0)
    done = 0
    while ready:
        plan += [("exec", COMMANDS[n]) if n in commands else ("remove", n) for n in ready]
        plan.append(("wait", ""))
        done += len(ready)
        after = []
        for name in ready:
            for other in first[name]:
                waiting[other] -= 1
                if waiting[other] == 0:
                    after.append(other)
        ready = sorted(after)
    if done != len(first):
        raise ValueError("the steps' order has a cycle")
    plan += [("keep", name) for name in builtins]
    plan += [("keep", name) for name in known if name not in loaded]
    return plan


def rc3_tasks(path):
    """The tasks an rc3 file declares, read with ast (not run): name and keywords."""
    tree = ast.parse(Path(path).read_text(), path)
    tasks = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "setup":
            raise ValueError(f"{path}: setup() may do anything")
        for call in getattr(node, "decorator_list", []):
            if not (isinstance(call, ast.Call) and getattr(call.func, "id", "") == "task"):
                continue
            t = {"ranks": "all", "before": [], "after": [], "needs": [], "needs_config": [], "needs_attrs": [], "needs_env": []}
            t["name"] = ast.literal_eval(call.args[0])
            for kw in call.keywords:
                t[kw.arg] = ast.literal_eval(kw.value)
            tasks.append(t)
    return tasks


def rc3d_scripts():
    """The rc3.d scripts flux-core's rc3 runs (run_all_rc_scripts), in its order."""
    from flux.conf_builtin import conf_builtin_get

    dirs = [Path(conf_builtin_get("confdir")).resolve()]
    dirs += [Path(d) for d in os.environ.get("FLUX_RC_EXTRA", "").split(":") if d.strip()]
    scripts = []
    for d in dirs:
        rcdir = d / "rc3.d"
        if rcdir.is_dir():
            scripts += sorted(str(f) for f in rcdir.iterdir() if f.is_file() and os.access(f, os.X_OK))
    return scripts
