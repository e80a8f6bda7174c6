#!/bin/sh
# MiniCluster broker entrypoint. Pod index 0 runs the lead broker (rank 0), the others run
# workers.
#   - A broker that exits because its instance ended starts again and rejoins
#     (MINICLUSTER_REJOIN): a lost lead comes back as a new pod and the instance re-forms
#     whole. An ephemeral lead exits with its command's status instead; the Job's
#     successPolicy then ends the workers.
#   - A broker that fails within seconds of starting, three times running, cannot start (a
#     config or certificate problem): exit MINICLUSTER_EXIT_CANNOT_START, which fails the Job.
#   - SIGTERM (scale-down, uninstall, a deleted pod) stops the broker; the pod exits 143.
# The functions below run in the order main (at the end) calls them.
set -eu
log() { printf 'minicluster[%s]: %s\n' "${JOB_COMPLETION_INDEX:-?}" "$*" >&2; }
die() { log "error: $*"; exit "${MINICLUSTER_EXIT_CANNOT_START:-78}"; }

# logging.quiet (the Flux Operator's): the log holds the command's output and commands.post's
# alone; errors that end the pod still show.
if [ "${MINICLUSTER_QUIET:-false}" = true ]; then
  log() { :; }
  die() {
    printf 'minicluster[%s]: error: %s\n' "${JOB_COMPLETION_INDEX:-?}" "$*" >&2
    exit "${MINICLUSTER_EXIT_CANNOT_START:-78}"
  }
fi

config=/minicluster/config
run=/minicluster/run
# Marks in the broker's rundir. A worker's broker (modprobe-rc1.py) leaves "joined" as its rc1
# starts and "stopping" as it begins to stop (on_term too); rc1-done as its rc1 ends. The
# broker's rc3 (broker-rc3.sh) leaves rc3-started and rc3-done. Each start of the broker
# begins without them.
joined_mark=$run/flux/joined
stopping_mark=$run/flux/stopping
rc1_done_mark=$run/flux/rc1-done
# modprobe-rc1.py writes "run" here once the broker runs (watch_online).
online_fifo=$run/flux/online.fifo
rc3_started=$run/flux/rc3-started
rc3_done=$run/flux/rc3-done
# Readiness: the keys container serves this file to the kubelet's probe (watch_online).
online_mark=/minicluster/keys/.online
# POST /v1/service/stop leaves this behind: the instance was stopped on purpose.
api_stopped=$run/api-stopped
# Fast exit: the command's wrapper writes its status here (initial_program); on every worker,
# command-ended once the command has ended with 0, just before the wrapper ends their brokers.
command_status=$run/command-status
command_ended=$run/command-ended

# commands.* (the operator's): user_command NAME SCRIPT [shown] runs SCRIPT. init, pre,
# brokerPre and workerPre run in this shell, as the operator's script runs them: what they
# export, the directory they cd to and what they source reach the broker and so the command;
# an exit in them ends the container. post runs in a shell of its own (/bin/sh -c).
# logging.quiet discards the output unless shown (post's is); a failure is logged and ignored,
# or with logging.strict ends the pod with its status (the operator's `set -e`).
user_command() {
  [ -n "$2" ] || return 0
  cmd_status=0
  run_user=user_here
  if [ "$1" = post ]; then run_user=user_child; fi
  if [ "${MINICLUSTER_QUIET:-false}" = true ] && [ "${3:-}" != shown ]; then
    "$run_user" "$2" > /dev/null 2>&1 3<&- 4<&- || cmd_status=$?
  else
    "$run_user" "$2" 3<&- 4<&- || cmd_status=$?
  fi
  if [ "$cmd_status" -ne 0 ]; then
    if [ "${MINICLUSTER_STRICT:-false}" = true ]; then
      printf 'minicluster[%s]: error: commands.%s failed with status %s (logging.strict)\n' "${JOB_COMPLETION_INDEX:-?}" "$1" "$cmd_status" >&2
      exit "$cmd_status"
    fi
    log "commands.$1 failed with status $cmd_status (ignored: logging.strict is off)"
  fi
  return 0
}

user_child() { /bin/sh -c "$1"; }
# user_here: the script may use unset variables (a shell's default); this script may not.
user_here() {
  set +u
  user_status=0
  eval "$1" || user_status=$?
  set -eu
  return "$user_status"
}
# source, which bash has and many /bin/sh lack, is the POSIX `.` in the scripts (through eval:
# a shell that has it refuses the name as a function's as it reads this file).
if ! command -v source > /dev/null 2>&1; then
  eval 'source() { . "$1"; }'
fi

# quote WORD sets quoted to WORD in single quotes, as the shell reads it back (eval).
quote() {
  quote_rest=$1
  quoted=
  while :; do
    case $quote_rest in
      *\'*)
        quoted="$quoted${quote_rest%%\'*}'\\''"
        quote_rest=${quote_rest#*\'}
        ;;
      *) break ;;
    esac
  done
  quoted="'$quoted$quote_rest'"
}
# broker_args holds the arguments of `flux broker`, each quoted (POSIX sh has no arrays);
# add_args WORD... appends words to it, and supervise gets them back with eval.
broker_args=
add_args() {
  for word; do
    quote "$word"
    broker_args="$broker_args $quoted"
  done
}

# wait_for_helpers: the helper containers (the keys step; the copy of the view) start with
# this one, each with a directory here (MINICLUSTER_HELPERS). Each makes the FIFO .alive there
# and ends when no one holds it open: hold it (fds 3, 4) for as long as this container lives,
# first, so that no way out of this script leaves a helper running. Then wait for each one's
# .ready; .invalid (a broken key: the broker cannot start) or .failed ends this container.
# .ended, written on the way out in the keys volume (the one this container may write and
# every helper sees), tells a helper that opened its FIFO too late.
helpers_ended() {
  (: > /minicluster/keys/.ended) 2>/dev/null || true
}
wait_for_helpers() {
  trap helpers_ended EXIT
  fd=3
  for dir in ${MINICLUSTER_HELPERS:-}; do
    until [ -p "$dir/.alive" ] || [ -f "$dir/.failed" ]; do pause; done
    if [ -p "$dir/.alive" ]; then
      eval "exec $fd<>\"\$dir/.alive\""
      fd=$((fd + 1))
    fi
  done
  helpers_status=0
  helpers_wait 0 || helpers_status=$?
  case $helpers_status in
    0) ;;
    2) die "$helpers_error" ;;
    *) log "error: $helpers_error"; exit 1 ;;
  esac
}

# find_flux sets flux_cmd, and where this Flux lives (flux_root: the view, or the prefix of
# the image's flux command) and how to name it (flux_from). Fluxion and flux-pmix may sit
# there rather than in flux-core's own prefix (a spack view links every package's files into
# one tree).
find_flux() {
  flux_cmd=$(real_flux)
  if [ -z "$flux_cmd" ]; then
    if [ -n "${MINICLUSTER_FLUX_VIEW:-}" ]; then
      die "flux is not in the flux view at $MINICLUSTER_FLUX_VIEW/bin: set flux.view.image to a Flux view image (e.g. ghcr.io/converged-computing/flux-view-ubuntu:tag-noble)"
    fi
    die "flux is not on PATH in image $MINICLUSTER_IMAGE: set flux.view.enabled=true to copy Flux from a view image, or set image to one that has Flux installed"
  fi
  if [ -n "${MINICLUSTER_FLUX_VIEW:-}" ]; then
    flux_root=$MINICLUSTER_FLUX_VIEW
    flux_from="the flux view of $MINICLUSTER_FLUX_VIEW_IMAGE"
  else
    flux_root=$(dirname "$(dirname "$flux_cmd")")
    flux_from="image $MINICLUSTER_IMAGE"
  fi
}

# use_fluxion (flux.scheduler=fluxion) points Flux at Fluxion where it sits beside this Flux,
# or fails when this Flux has none.
use_fluxion() {
  [ "$MINICLUSTER_SCHEDULER" = fluxion ] || return 0
  confdir=$(flux config builtin confdir 2>/dev/null || true)
  if [ -f "$flux_root/etc/flux/modprobe/modprobe.d/fluxion.toml" ]; then
    # flux modprobe reads Fluxion's modprobe.d/fluxion.toml (its modules outrank
    # sched-simple) and rc1.d/fluxion.py; the broker loads its modules from there.
    FLUX_MODPROBE_PATH_APPEND=$flux_root/etc/flux/modprobe${FLUX_MODPROBE_PATH_APPEND:+:$FLUX_MODPROBE_PATH_APPEND}
    FLUX_MODULE_PATH_PREPEND=$flux_root/lib/flux/modules${FLUX_MODULE_PATH_PREPEND:+:$FLUX_MODULE_PATH_PREPEND}
    FLUX_EXEC_PATH_PREPEND=$flux_root/libexec/flux/cmd${FLUX_EXEC_PATH_PREPEND:+:$FLUX_EXEC_PATH_PREPEND}
    export FLUX_MODPROBE_PATH_APPEND FLUX_MODULE_PATH_PREPEND FLUX_EXEC_PATH_PREPEND
  elif [ ! -f "$confdir/modprobe/modprobe.d/fluxion.toml" ]; then
    die "flux.scheduler=fluxion, but $flux_from has no Fluxion (flux-sched): no etc/flux/modprobe/modprobe.d/fluxion.toml in $flux_root or in flux-core's ${confdir:-confdir}. Use a Flux with flux-sched (the Flux Operator's flux-view-* images have it), or set flux.scheduler=simple"
  fi
  # Fluxion's default resource options limit what it reads of a hwloc topology
  # (load-allowlist), which R from `flux R encode` does not carry: without them it does not
  # warn "allowlist unsupported" at every start. Options of your own (env) are kept.
  if [ -z "${FLUXION_RESOURCE_OPTIONS+set}" ]; then
    FLUXION_RESOURCE_OPTIONS=
    export FLUXION_RESOURCE_OPTIONS
  fi
}

# find_pmix sets pmix_plugins to where flux-pmix's shell plugin is (for OpenMPI: `flux run -o
# pmi=pmix`), empty when nowhere, and pluginpath to where the job shells look; a command that
# asks for it without it cannot run.
find_pmix() {
  pluginpath=$(flux config builtin shell_pluginpath 2>/dev/null || true)
  if [ -f "$pluginpath/pmix.so" ]; then
    pmix_plugins=$pluginpath
  elif [ -f "$flux_root/lib/flux/shell/plugins/pmix.so" ]; then
    pmix_plugins=$flux_root/lib/flux/shell/plugins
  else
    pmix_plugins=
  fi
  case $MINICLUSTER_COMMAND in
    *pmi=*pmix*)
      [ -n "$pmix_plugins" ] || die "the command asks for -o pmi=pmix (OpenMPI's PMIx, served by flux-pmix), but $flux_from has no flux-pmix: no lib/flux/shell/plugins/pmix.so in $flux_root or in ${pluginpath:-the shell plugin path of flux-core}. Use a Flux with flux-pmix (the Flux Operator's flux-view-* images have it), or an MPI that Flux's own PMI serves (MPICH: no -o pmi=pmix)"
      ;;
  esac
}

# pre_commands: commands.pre on every broker, then brokerPre on the lead or workerPre on the
# others.
pre_commands() {
  user_command pre "${MINICLUSTER_CMD_PRE:-}"
  if [ "$index" -eq 0 ]; then
    user_command brokerPre "${MINICLUSTER_CMD_BROKER_PRE:-}"
  else
    user_command workerPre "${MINICLUSTER_CMD_WORKER_PRE:-}"
  fi
}

# install_private SRC DEST: a copy only the user running Flux can read.
install_private() {
  rm -f "$2"
  (umask 077 && cp "$1" "$2") && chmod 0400 "$2"
}

# install_keys: the keys container hands the keys over readable by every user of the pod (it
# cannot know which user runs Flux). Install private copies, owned by the user running Flux (Flux
# refuses a certificate that group or others can read; a munge key others can read lets them
# pass for any user), and on the lead the API's credentials and TLS key; then tell the keys
# container (.installed), which deletes the copies everyone could read.
install_keys() {
  install_private /minicluster/keys/curve.cert "$MINICLUSTER_CURVE_CERT"
  if [ -f /minicluster/keys/munge.key ]; then
    install_private /minicluster/keys/munge.key /etc/munge/munge.key
  fi
  if [ -d /minicluster/keys/api ]; then
    for f in user token secret-key tls.crt tls.key; do
      [ -f "/minicluster/keys/api/$f" ] || continue
      case $f in tls.*) dir=/minicluster/api/tls ;; *) dir=/minicluster/api/credentials ;; esac
      mkdir -p "$dir" && chmod 0700 "$dir"
      install_private "/minicluster/keys/api/$f" "$dir/$f"
    done
  fi
  : > /minicluster/keys/.installed
}

# encode_resources writes R, the resources of all maxSize hosts (brokers that are not up are
# shown as down): each with MINICLUSTER_CORES cores and MINICLUSTER_GPUS GPUs where the pod's
# limits (or values) say so, or else what hwloc sees on this node.
ids() { if [ "$1" -eq 1 ]; then echo 0; else echo "0-$(($1 - 1))"; fi; }
encode_resources() {
  cores=${MINICLUSTER_CORES:-0}
  gpus=${MINICLUSTER_GPUS:-0}
  if [ "$gpus" -gt 0 ] && [ "$cores" -eq 0 ]; then cores=$(nproc); fi
  set -- --hosts="$hosts"
  if [ "$cores" -gt 0 ]; then set -- "$@" --cores="$(ids "$cores")"; else set -- "$@" --local; fi
  if [ "$gpus" -gt 0 ]; then set -- "$@" --gpus="$(ids "$gpus")"; fi
  flux R encode "$@" > "$MINICLUSTER_RESOURCE_PATH" ||
    die "flux R encode $* failed: Flux cannot run in this image (see above)"
}

# start_api (api.enabled): the lead serves the Flux RESTful API beside its broker, through the
# flux the broker runs (the keys container copied the server here). It lives as long as this
# container and outlasts the broker's restarts; a server that fails is started again.
start_api() {
  if [ "$index" -ne 0 ] || [ -z "${MINICLUSTER_API_PORT:-}" ]; then return 0; fi
  set -- --listen=":$MINICLUSTER_API_PORT" --flux="$flux_cmd" --stop-marker="$api_stopped" --hosts="$hosts"
  if [ "${MINICLUSTER_API_AUTH:-true}" = true ]; then
    [ -f /minicluster/api/credentials/token ] || die "the API's credentials were not handed over (api.requireAuth=true): see kubectl logs <lead pod> -c keys"
    set -- "$@" --credentials=/minicluster/api/credentials --token-lifetime="${MINICLUSTER_API_TOKEN_LIFETIME:-8h}"
  else
    set -- "$@" --no-auth
  fi
  if [ "${MINICLUSTER_API_TLS:-false}" = true ]; then
    [ -f /minicluster/api/tls/tls.key ] || die "the API's TLS key was not handed over (api.tls.secretName): see kubectl logs <lead pod> -c keys"
    set -- "$@" --tls-cert=/minicluster/api/tls/tls.crt --tls-key=/minicluster/api/tls/tls.key
  fi
  (
    while :; do
      /minicluster/keys/minicluster-api "$@" || log "the API server exited with status $?: starting it again"
      sleep 1
    done
  ) 3<&- 4<&- &
}

# start_autoscale (autoscale.enabled, metrics.enabled): the lead runs minicluster-autoscale beside
# its broker (the keys container copied it here). It sizes the MiniCluster by asking the keys
# container, which holds the pod's Kubernetes credentials, through /minicluster/keys/autoscale,
# and serves the metrics. Like the API server it outlasts the broker's restarts.
start_autoscale() {
  if [ "$index" -ne 0 ] || [ -z "${MINICLUSTER_AUTOSCALE:-}${MINICLUSTER_METRICS_PORT:-}" ]; then return 0; fi
  set -- --flux="$flux_cmd" --script=/minicluster/scripts/autoscale-state.py --dir=/minicluster/keys/autoscale \
    --every="${MINICLUSTER_AUTOSCALE_EVERY:-2s}"
  if [ -n "${MINICLUSTER_METRICS_PORT:-}" ]; then set -- "$@" --metrics-addr=":$MINICLUSTER_METRICS_PORT"; fi
  # shellcheck disable=SC2086 # MINICLUSTER_AUTOSCALE holds flags the chart wrote, split on purpose
  set -- "$@" ${MINICLUSTER_AUTOSCALE:-}
  (
    while :; do
      /minicluster/keys/minicluster-autoscale "$@" || log "the autoscaler exited with status $?: starting it again"
      sleep 1
    done
  ) 3<&- 4<&- &
}

# broker_options: the broker's settings (broker_args).
broker_options() {
  # logging.quiet: the brokers log emergencies alone; logging.debug (not quiet): everything.
  if [ "${MINICLUSTER_QUIET:-false}" = true ]; then
    MINICLUSTER_LOG_LEVEL=0
  elif [ "${MINICLUSTER_DEBUG:-false}" = true ]; then
    MINICLUSTER_LOG_LEVEL=7
  fi
  add_args --config-path="$config" -Srundir="$run/flux" -Slocal-uri="local://$run/flux/local" \
    -Sbroker.quorum="$size" -Stbon.connect_timeout="$MINICLUSTER_CONNECT_TIMEOUT" \
    -Slog-stderr-level="$MINICLUSTER_LOG_LEVEL" -Slog-stderr-mode=local
  # The lead's job clean-up on SIGTERM. A worker's is only the marker below; it must finish.
  if [ "$index" -eq 0 ]; then
    add_args -Sbroker.cleanup-timeout="${MINICLUSTER_CLEANUP_TIMEOUT:-0s}"
  fi
  if [ -n "$MINICLUSTER_TOPOLOGY" ]; then
    add_args -Stbon.topo="$MINICLUSTER_TOPOLOGY"
  fi
  # logging.zeromq: ZeroMQ's debug messages of the overlay network.
  if [ "${MINICLUSTER_ZEROMQ:-false}" = true ]; then
    add_args -Stbon.zmqdebug=1
  fi
  # flux-pmix outside flux-core's plugin path (a view's): the job shells' initrc loads it.
  if [ -n "$pmix_plugins" ] && [ "$pmix_plugins" != "$pluginpath" ]; then
    if write_shell_initrc; then
      add_args -Sconf.shell_initrc="$run/shell/initrc.lua"
    else
      add_args -Sconf.shell_pluginpath="$pmix_plugins"
    fi
  fi
}

# write_shell_initrc: the job shells' initrc: flux-pmix's plugin for the jobs that ask for PMIx
# (-o pmi=pmix) alone, then flux-core's own initrc. Loading the plugin costs a job shell about
# 2 ms of CPU, a tenth of what a small job costs its broker, so the others go without. The
# shell looks for lua.d beside its initrc: there it is flux-core's. Fails where flux-core does
# not say where its initrc is.
write_shell_initrc() {
  builtin_initrc=$(flux config builtin shell_initrc 2>/dev/null) && [ -f "$builtin_initrc" ] || return 1
  mkdir -m 0755 "$run/shell" 2>/dev/null || [ -d "$run/shell" ] || return 1
  ln -sfn "$(dirname "$builtin_initrc")/lua.d" "$run/shell/lua.d"
  cat > "$run/shell/initrc.lua" <<EOF
-- Written by the MiniCluster's entrypoint.
local pmi = shell.options.pmi
if type (pmi) == "string" and ("," .. pmi .. ","):find (",pmix,", 1, true) then
    plugin.load { file = [==[$pmix_plugins/pmix.so]==], conf = {} }
end
source [==[$builtin_initrc]==]
EOF
  chmod 0644 "$run/shell/initrc.lua"
}

# state_options (flux.state, MINICLUSTER_STATE, the lead's): the lead restores the archive an
# earlier lead left there, and dumps the content store to a temporary name, state_tmp (with
# the archive's extension: flux dump picks the format from it), that only a whole rc3 renames
# to the archive (broker-rc3.sh), so that a dump that fails or is cut short never replaces a
# good archive. Sets state, empty without flux.state.
state_options() {
  state=
  if [ "$index" -ne 0 ] || [ -z "${MINICLUSTER_STATE:-}" ]; then return 0; fi
  state=$MINICLUSTER_STATE
  state_tmp=$(dirname "$state")/.partial-$(basename "$state")
  [ -w "$(dirname "$state")" ] ||
    die "flux.state: the claim mounted at $(dirname "$state") is not writable by user $(id -u), whom Flux runs as, so no dump could be kept: give the pods podSecurityContext.fsGroup (most storage makes the volume group-writable then), or a claim this user may write"
  rm -rf "$state_tmp"
  if [ -s "$state" ]; then
    log "flux.state: restoring Flux's state from $state ($(wc -c < "$state") bytes)"
    add_args -Scontent.restore="$state"
  else
    log "flux.state: no archive at $state yet: Flux starts empty"
  fi
  add_args -Scontent.dump="$state_tmp"
}

# rc3_option: rc3 (unloading the modules) runs to its end. A worker the lead is already
# shutting down gets SIGTERM too on uninstall; a signal during rc3 aborts it with SIGHUP (sent
# to rc3's process group), and a broker that exits with its modules loaded waits 10 s for each
# of them (flux-core 0.88): the broker's shell ignores SIGHUP, and so does all it runs.
# Every broker's rc3 is rc3.sh: Flux's steps without Python where its rc1 left a plan
# (modprobe-rc1.py), else Flux's own rc3; broker-rc3.sh runs it, leaving the marks a worker's
# (kill_after_rc3) and a lead's with flux.state (bound_dump) need, and keeping the dump.
rc3_option() {
  if ! rc3=$(flux config builtin rc3_path 2>/dev/null) || [ -z "$rc3" ]; then return 0; fi
  marks=
  if [ -n "$state" ]; then
    quote "$rc3_started"
    marks="--started $quoted"
    quote "$state"
    marks="$marks --state $quoted"
    quote "$state_tmp"
    marks="$marks $quoted"
  fi
  if [ -n "$state" ] || [ "$index" -ne 0 ]; then
    quote "$rc3_done"
    marks="${marks:+$marks }--done $quoted"
  fi
  quote "$run/flux/rc3-plan"
  add_args -Sbroker.rc3_path="trap '' HUP; exec /bin/sh /minicluster/scripts/broker-rc3.sh ${marks:+$marks }-- /bin/sh /minicluster/scripts/rc3.sh $quoted $rc3"
}

# user_broker_options: flux.brokerOptions, one a line, each whole.
user_broker_options() {
  [ -n "$MINICLUSTER_BROKER_OPTIONS" ] || return 0
  newline='
'
  old_ifs=$IFS
  IFS=$newline
  set -f
  for option in $MINICLUSTER_BROKER_OPTIONS; do
    add_args "$option"
  done
  set +f
  IFS=$old_ifs
}

# initial_program: no command: interactive, the instance stays up (no initial program). A
# command: ephemeral, the lead runs it. Sets ephemeral_lead and fast_exit.
initial_program() {
  ephemeral_lead=false
  if [ -n "$MINICLUSTER_COMMAND" ] && [ "$index" -eq 0 ]; then ephemeral_lead=true; fi
  # Fast exit (flux.ephemeralExit): the command's wrapper writes its status to command_status
  # and kills the broker, so that the lead's pod ends with that status without Flux's orderly
  # shutdown. The command's output reaches the log directly (the broker's initial program
  # inherits its stdio).
  fast_exit=false
  if [ "$ephemeral_lead" = true ] && [ "$MINICLUSTER_EPHEMERAL_EXIT" = fast ]; then
    case $MINICLUSTER_BROKER_OPTIONS in
      *content.dump*) log "flux.ephemeralExit=fast: brokerOptions ask for a content dump, which needs Flux's whole shutdown: taking it" ;;
      *)
        if [ -n "$state" ]; then
          log "flux.ephemeralExit=fast: flux.state dumps the content store, which needs Flux's whole shutdown: taking it"
        else
          fast_exit=true
        fi
        ;;
    esac
  fi
  if [ "$fast_exit" = true ]; then
    # After a command that succeeded, every worker is told so and its broker ended (in the
    # background, so that flux exec returns first): the workers' pods succeed with the lead's.
    # Otherwise the Job ends them once the lead has (SIGTERM, their rc3 and a goodbye to a
    # lead that is gone), seconds more before the Job is Complete.
    # shellcheck disable=SC2016 # expanded by the wrappers' shells
    end_workers=': > '"$command_ended"' && b=$(flux getattr broker.pid) && { (sleep 0.1; kill -KILL "$b") < /dev/null > /dev/null 2>&1 & }'
    # shellcheck disable=SC2016 # expanded by the wrapper's shell
    add_args /bin/sh -c 'w=$1; shift; "$@"; status=$?; echo "$status" > "$0"; if [ "$status" -eq 0 ]; then flux exec -r all -x 0 --noinput /bin/sh -c "$w" > /dev/null 2>&1; fi; kill -KILL "$(flux getattr broker.pid)"; exit "$status"' "$command_status" "$end_workers"
  fi
  # commands.prefix: words put before the initial program (a wrapper such as `strace -f`);
  # logging.timed: the initial program is timed and its wall time printed as the operator does.
  if [ "$ephemeral_lead" = true ]; then
    if [ "${MINICLUSTER_TIMED:-false}" = true ]; then
      # shellcheck disable=SC2016 # expanded by the timing shell
      add_args /bin/sh -c 'start=$(date +%s); "$@"; status=$?; t=$(($(date +%s) - start)); printf "FLUXTIME fluxsubmit wall time %d:%02d\n" $((t / 60)) $((t % 60)) >&2; exit $status' timed
    fi
    set -f
    # shellcheck disable=SC2086 # words, as the operator splits them
    add_args ${MINICLUSTER_COMMAND_PREFIX:-}
    set +f
  fi
  submit_verbose=
  if [ "${MINICLUSTER_DEBUG:-false}" = true ]; then submit_verbose=-vvv; fi
  if [ "$ephemeral_lead" = true ] && [ -n "${MINICLUSTER_BATCH:-}" ]; then
    batch_program
  elif [ -z "$MINICLUSTER_COMMAND" ]; then
    add_args -Sbroker.rc2_none=1
  elif [ "$MINICLUSTER_TASKS" -gt 0 ] && [ -n "$submit_verbose" ]; then
    add_args flux submit "$submit_verbose" --quiet --watch -N "$size" -n "$MINICLUSTER_TASKS" /bin/sh -c "$MINICLUSTER_COMMAND"
  elif [ "$MINICLUSTER_TASKS" -gt 0 ]; then
    add_args flux submit --quiet --watch -N "$size" -n "$MINICLUSTER_TASKS" /bin/sh -c "$MINICLUSTER_COMMAND"
  else
    add_args /bin/sh -c "$MINICLUSTER_COMMAND"
  fi
}

# batch_program (batch, the operator's): each line of the command is a job of one `flux batch`
# (batch.raw: the lines are the batch script as they are), outputs in
# batch.outputDir/job-<line>.out.
batch_program() {
  outdir=${MINICLUSTER_BATCH_OUTPUT:-/tmp/fluxout}
  mkdir -p "$outdir"
  batch_script=$run/flux-job.batch
  {
    echo '#!/bin/sh'
    line_index=0
    printf '%s\n' "$MINICLUSTER_COMMAND" | while IFS= read -r line; do
      if [ -n "$line" ]; then
        if [ "$MINICLUSTER_BATCH" = raw ]; then
          printf '%s\n' "$line"
        else
          printf 'flux submit --flags waitable --error=%s/job-%d.err --output=%s/job-%d.out %s\n' "$outdir" "$line_index" "$outdir" "$line_index" "$line"
        fi
      fi
      line_index=$((line_index + 1))
    done
    if [ "$MINICLUSTER_BATCH" != raw ]; then printf 'flux queue idle\nflux jobs -a\n'; fi
  } > "$batch_script"
  chmod 0755 "$batch_script"
  # The operator's node spec: -N size when tasks >= size or 0, -n tasks when tasks > 0.
  if [ "$MINICLUSTER_TASKS" -eq 0 ]; then nodespec="-N $size"
  elif [ "$MINICLUSTER_TASKS" -ge "$size" ]; then nodespec="-N $size -n $MINICLUSTER_TASKS"
  else nodespec="-n $MINICLUSTER_TASKS"; fi
  batch_run="flux batch $nodespec $submit_verbose --flags waitable $batch_script && flux job wait --all"
  if [ "${MINICLUSTER_QUIET:-false}" = true ]; then batch_run="{ $batch_run; } > /dev/null 2>&1"; fi
  add_args /bin/sh -c "$batch_run"
}

# find_wrapped_broker (flux.wrap, flux start's --wrap): the comma-separated words run the
# broker's program, flux-broker, found as flux start finds it: on FLUX_EXEC_PATH in Flux's
# environment. Sets broker_path, empty without flux.wrap.
find_wrapped_broker() {
  broker_path=
  [ -n "${MINICLUSTER_WRAP:-}" ] || return 0
  # shellcheck disable=SC2016 # expanded in Flux's environment
  broker_path=$(flux env /bin/sh -c 'IFS=:; for dir in $FLUX_EXEC_PATH; do if [ -x "$dir/flux-broker" ]; then echo "$dir/flux-broker"; exit 0; fi; done; exit 1') ||
    die "flux.wrap: no flux-broker on the FLUX_EXEC_PATH of $flux_from, so the broker cannot be wrapped as flux start --wrap does; set flux.wrap=\"\""
  log "flux.wrap: the brokers run as: $(printf '%s' "$MINICLUSTER_WRAP" | tr , ' ') $broker_path"
}

# use_modprobe_rc1 puts modprobe-rc1.py where Flux's modprobe rc1 finds it, and sets
# rc1_modprobe (Flux's modprobe rc1 runs, so modprobe-rc1.py leaves its marks) and
# kill_unjoined. A worker's broker that has not joined its parent holds nothing yet: SIGTERM
# would only make it run rc3, which fails without a parent, or be ignored while it loads its
# built-in modules (Flux ignores signals then), leaving it waiting for a parent that is gone
# until the kubelet kills it. Such a broker is killed at once. Only where "joined" will come:
# Flux's modprobe rc1, which loads modprobe-rc1.py.
use_modprobe_rc1() {
  FLUX_MODPROBE_PATH_APPEND=${FLUX_MODPROBE_PATH_APPEND:+$FLUX_MODPROBE_PATH_APPEND:}/minicluster/modprobe
  export FLUX_MODPROBE_PATH_APPEND
  rc1_modprobe=false
  if [ "$(flux config builtin rc1_path 2>/dev/null || true)" = "flux modprobe rc1" ]; then
    case $MINICLUSTER_BROKER_OPTIONS in
      *rc1_path*) ;;
      *) rc1_modprobe=true ;;
    esac
  fi
  kill_unjoined=false
  if [ "$index" -ne 0 ]; then kill_unjoined=$rc1_modprobe; fi
}

# kill_after_rc3: after its rc3 a worker's broker says goodbye to its parent and waits up to
# 60 s for the answer. When the lead has gone first (an ephemeral lead's fast exit, a lost
# lead), no answer comes; the worker's jobs and modules are done by then, so it is killed 2 s
# after its rc3. So is a lead with flux.state whose rc3 (the dump) failed and left its modules
# loaded.
kill_after_rc3() {
  (
    until [ -e "$rc3_done" ] || ! kill -0 "$pid" 2>/dev/null; do pause; done
    sleep 2
    if kill -0 "$pid" 2>/dev/null; then
      log "the broker's rc3 ended 2 s ago, but the broker has not exited (a worker: no answer to its goodbye from its parent): killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  ) 3<&- 4<&- &
}
# bound_dump (flux.state): once the lead's job clean-up is over and its rc3 (the dump) has
# started, the broker has MINICLUSTER_STATE_DUMP_TIMEOUT seconds to finish it, so that a dump
# that hangs ends the pod within terminationGracePeriodSeconds, keeping the previous archive.
bound_dump() {
  (
    until [ -e "$rc3_started" ] || ! kill -0 "$pid" 2>/dev/null; do pause; done
    deadline=$(($(date +%s) + ${MINICLUSTER_STATE_DUMP_TIMEOUT:-10}))
    until [ -e "$rc3_done" ] || ! kill -0 "$pid" 2>/dev/null; do
      if [ "$(date +%s)" -ge "$deadline" ]; then
        log "flux.state: the broker's rc3 (the content dump) has taken more than flux.state.dumpTimeoutSeconds=${MINICLUSTER_STATE_DUMP_TIMEOUT:-10}: killing it; the previous archive is kept"
        kill -KILL "$pid" 2>/dev/null || true
        exit 0
      fi
      pause
    done
  ) 3<&- 4<&- &
}
stop_broker() {
  if [ "$kill_unjoined" = true ] && [ ! -e "$joined_mark" ]; then
    log "SIGTERM: the broker has not joined its parent yet: killing it"
    kill -KILL "$pid" 2>/dev/null || true
  else
    log "SIGTERM: stopping the broker"
    kill -TERM "$pid" 2>/dev/null || true
    if [ "$index" -ne 0 ] || [ -n "$state" ]; then kill_after_rc3; fi
    if [ -n "$state" ]; then bound_dump; fi
  fi
}
on_term() {
  stopping=1
  # Once only: on uninstall the lead stops its workers as they get their own SIGTERM.
  if [ -e "$stopping_mark" ]; then
    log "SIGTERM: the broker is already stopping"
    return
  fi
  if [ -n "$pid" ]; then stop_broker; else log "SIGTERM: stopping"; fi
  : > "$stopping_mark" 2>/dev/null || true
}

# watch_online PID: readiness: online_mark, once the broker is in Flux's run state: the lead
# once every broker of the quorum (size) is online and its rc1, the scheduler's load included,
# is done; a worker once it has joined the broker.online group the lead counts and its parent
# runs. Once rc1 has ended (modprobe-rc1.py leaves rc1-done), a process it left behind says
# so on online.fifo ("run"; "poll": ask Flux). Elsewhere flux uptime says the state, asked
# every 0.2 s once rc1 has ended; before that every second, or every 5 s where Flux's modprobe
# runs rc1 (only in case it refused the task that leaves the mark), so that a broker that is
# starting, or waiting to join its parent, costs its node little: each flux command takes
# some 30 ms of CPU.
watch_online() {
  # Held for reading and writing from the start: the line may come before it is read.
  fifo=false
  if [ -p "$online_fifo" ] && command exec 5<>"$online_fifo"; then fifo=true; fi
  every=5
  if [ "$fifo" = true ] && [ "$rc1_modprobe" = true ]; then every=25; fi
  polls=0
  while kill -0 "$1" 2>/dev/null; do
    if [ "$fifo" = true ] && [ -e "$rc1_done_mark" ]; then
      said=
      read -r said <&5 || true
      if [ "$said" = run ]; then
        : > "$online_mark"
        return
      fi
      fifo=false
    fi
    if { [ "$fifo" = false ] && [ -e "$rc1_done_mark" ]; } || [ $((polls % every)) -eq 0 ]; then
      # " 07:23:04 run 2.3m,  owner ...": the state is the second word.
      uptime_status=0
      uptime=$(FLUX_URI=local://$run/flux/local flux uptime 2>/dev/null) || uptime_status=$?
      read -r _ broker_state _ <<EOF
$uptime
EOF
      # flux uptime crashes (flux-core 0.88) where the instance's user has no name (a runAsUser
      # the image's /etc/passwd lacks): there the end of rc1 is the sign, a little early.
      if [ "$uptime_status" -gt 128 ] && [ -e "$rc1_done_mark" ]; then broker_state=run; fi
      if [ "$broker_state" = run ]; then
        : > "$online_mark"
        return
      fi
    fi
    polls=$((polls + 1))
    sleep 0.2
  done
}

# run_broker ARGS...: one run of the broker, until it is gone; sets status to its exit status.
# SIGTERM (on_term) stops it on the way.
run_broker() {
  rm -rf "$run/flux" "$command_status" "$online_mark"
  mkdir -m 0700 "$run/flux"
  mkfifo -m 0600 "$online_fifo" 2>/dev/null || true
  started=$(date +%s)
  if [ -n "$broker_path" ]; then
    # shellcheck disable=SC2086 # the wrapper's words, split at commas
    (IFS=,; set -f; exec flux env $MINICLUSTER_WRAP "$broker_path" "$@") 3<&- 4<&- &
  else
    flux broker "$@" 3<&- 4<&- &
  fi
  pid=$!
  watch_online "$pid" 3<&- 4<&- &
  watcher=$!
  # A SIGTERM between the rm above and here found no broker to stop.
  if [ -n "$stopping" ]; then stop_broker; fi
  # wait returns early when SIGTERM arrives; wait again until the broker is gone.
  status=0
  wait "$pid" 2>/dev/null || status=$?
  while kill -0 "$pid" 2>/dev/null; do
    status=0
    wait "$pid" 2>/dev/null || status=$?
  done
  pid=
  # The watcher may have seen the broker alive just before it went: it ends before .online is
  # removed, so that it cannot write it after.
  kill "$watcher" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  rm -f "$online_mark"
  # A worker that has joined its parent once has a config and a certificate that work.
  if [ -e "$joined_mark" ]; then joined_once=true; fi
}

# after_broker: what the broker's exit (status) means: the pod ends (exit) or the broker
# starts again (return).
after_broker() {
  if [ -n "$stopping" ]; then
    exit 143
  fi
  if [ "$ephemeral_lead" = true ]; then
    if [ "$fast_exit" = true ] && [ -s "$command_status" ]; then
      status=$(cat "$command_status")
      log "the command ended with status $status (flux.ephemeralExit=fast: the instance stops with the pods)"
    else
      log "the command ended with status $status"
    fi
    user_command post "${MINICLUSTER_CMD_POST:-}" shown
    exit "$status"
  fi
  # The lead's command succeeded and its wrapper ended this broker (fast exit): done.
  if [ "$index" -ne 0 ] && [ -e "$command_ended" ]; then
    log "the command ended with status 0 on the lead, which ended this broker: the worker is complete"
    user_command post "${MINICLUSTER_CMD_POST:-}" shown
    exit 0
  fi
  # flux.completeWorkers (the operator's): a worker ends, successfully, once its broker exits.
  if [ "$index" -ne 0 ] && [ "${MINICLUSTER_COMPLETE_WORKERS:-false}" = true ]; then
    log "the broker exited with status $status: the worker is complete (flux.completeWorkers)"
    user_command post "${MINICLUSTER_CMD_POST:-}" shown
    exit 0
  fi
  if [ "$status" -eq 0 ]; then
    quick_failures=0
    if [ -e "$api_stopped" ]; then
      log "the instance was stopped through the API (POST /v1/service/stop)"
      exit 0
    fi
    if [ "$MINICLUSTER_REJOIN" != true ]; then
      log "the instance ended"
      user_command post "${MINICLUSTER_CMD_POST:-}" shown
      exit 0
    fi
    log "the instance ended: starting the broker again to rejoin the lead"
    return 0
  fi
  if [ $(($(date +%s) - started)) -lt 10 ]; then
    quick_failures=$((quick_failures + 1))
  else
    quick_failures=1
  fi
  # Quick failures after a join are the lead's doing, not a config problem: a lead still
  # stopping (its rc3, such as a long content dump) turns a rejoining worker away at once.
  if [ "$joined_once" = true ]; then quick_failures=0; fi
  if [ "$quick_failures" -ge 3 ]; then
    die "flux broker failed $quick_failures times in a row within 10 s of starting (last exit status $status): a config or certificate problem a retry cannot fix; its messages are above"
  fi
  log "broker exited with status $status: starting it again"
}

# supervise ARGS...: runs the broker with ARGS until after_broker ends the pod.
supervise() {
  pid=
  stopping=
  trap on_term TERM INT
  # FLUX_URI (the container's, for kubectl exec) is this broker's own socket: the broker sets
  # it for all it runs, and reads it only when started as a job of another instance.
  unset FLUX_URI
  quick_failures=0
  joined_once=false
  while :; do
    run_broker "$@"
    after_broker
    sleep 1 &
    wait $! || true
    if [ -n "$stopping" ]; then
      exit 143
    fi
  done
}

main() {
  user_command init "${MINICLUSTER_CMD_INIT:-}"
  index=${JOB_COMPLETION_INDEX:?this pod must belong to an indexed Job (JOB_COMPLETION_INDEX is unset)}
  hosts=$(cat "$config/hosts")
  size=$(cat "$config/size")
  wait_for_helpers
  . /minicluster/scripts/env.sh
  find_flux
  use_fluxion
  find_pmix
  pre_commands
  install_keys
  encode_resources
  start_api
  start_autoscale
  broker_options
  state_options
  rc3_option
  user_broker_options
  initial_program
  if [ "$index" -eq 0 ]; then
    log "lead broker: $size of hosts $hosts, quorum $size"
  fi
  find_wrapped_broker
  use_modprobe_rc1
  eval "set -- $broker_args"
  supervise "$@"
}

# shellcheck source=helpers.sh
. /minicluster/scripts/helpers.sh
main "$@"
