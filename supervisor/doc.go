// Package supervisor is what runs in every broker container of a MiniCluster: it prepares
// Flux's environment, starts the Flux broker, restarts it when the rules say so, says when
// Flux counts it online, and ends the container with the right status. The broker
// container's command is a short shell stub (charts/minicluster/files/entrypoint.sh) that
// waits until the keys container has copied this program into the pod, then execs it.
//
// The package reads in layers, each in its own file, in the order Run calls them:
//
//   - settings.go: the container's settings (MINICLUSTER_* from the Job's pod template) and
//     the pod's fixed paths.
//   - helpers.go: the containers beside the broker (the keys container, the copy of the
//     view): their FIFOs held while this program lives, their .ready awaited; the keys
//     installed as private copies; R written.
//   - fluxenv.go: Flux's environment: the view or the image's flux on PATH, Fluxion, flux-pmix,
//     the job shells' initrc, flux.wrap, the modprobe rc1 marks.
//   - commands.go: commands.init, pre, brokerPre and workerPre in one shell whose exports,
//     working directory, umask and limits then reach the broker; commands.post in a shell
//     of its own.
//   - options.go: the broker's command line: its settings, flux.state, rc3, the user's
//     options and the initial program (the command, batch, the fast-exit and timing
//     wrappers).
//   - services.go: the lead's API server and autoscaler, started again when they end.
//   - process.go: every child process and its exit status (this program is the container's
//     process 1: it reaps every process that ends in the container).
//   - broker.go: the broker's runs, its signals and the rules after each run (rejoin,
//     cannot start, the command's status).
//   - readiness.go: .online once Flux counts the broker online.
//
// Who owns which signal, and why:
//
//   - SIGTERM and SIGINT (the kubelet stopping the pod: scale-down, uninstall, a deleted pod)
//     come to this program, the container's process 1, and nowhere else. broker.go alone
//     decides what they mean: the first one is passed to the broker's process alone (not its
//     process group: the broker orders the end of its own children, rc3 and jobs, and a
//     signal to them would cut that short), or the broker is killed when it is a worker that
//     has not joined its parent yet (it holds nothing, and would wait for a parent that is
//     gone). A later one, or one once the broker's rc1 marked it "stopping", is kept: the
//     broker is stopping already, and a second SIGTERM would abort its rc3. Before the
//     broker first starts, a SIGTERM ends the container with 143.
//   - SIGKILL is this program's last word to a broker whose rc3 has ended but which has not
//     exited (a worker waiting for a goodbye from a lead that is gone) and to a broker whose
//     content dump (flux.state) takes longer than allowed.
//   - SIGHUP is ignored by the broker's rc3 (the rc3 option starts it with `trap ” HUP`):
//     Flux aborts an rc3 with it when a signal arrives during rc3.
//   - SIGCHLD: process.go reaps every child, orphans included, and hands each of ours its
//     status.
//   - The API server and autoscaler get SIGTERM when the container ends (they would otherwise
//     outlive it where the pod shares its process namespace).
package supervisor
