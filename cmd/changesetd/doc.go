// Command changesetd serves the changeset channel of the Agent Host
// Protocol over WebSocket: live, reviewable changesets of git working
// trees, cut into an agent's turns, with review flags and comments, and a
// review page of its own. Its commands:
//
//	changesetd serve [flags] [DIR...]             run the daemon; each DIR becomes a session
//	changesetd turn start|end|status|edit|notify  mark an agent turn boundary; list running turns; report an agent's writes
//	changesetd annotations [flags]                print a session's review comments; reply, resolve, reopen
//	changesetd diff [flags]                       print a changeset as one patch for git apply
//	changesetd edits [flags]                      report an edit tool's EditOutput events (NDJSON on stdin)
//	changesetd sessions [rm ID...] [flags]        list the daemon's sessions; remove some
//	changesetd rewind [flags] TURN                put every file a turn changed back as it was before it
//	changesetd draft [flags] PATH < TEXT          show a file being written before it is (its text so far on stdin)
//	changesetd health [flags]                     exit 0 if the daemon answers /healthz, 1 if not
//	changesetd service install|uninstall|status   start the daemon at login (systemd or launchd)
//	changesetd version                            print the version and the commit it was built from
//
// serve is the daemon (main.go); the others are clients of a running
// daemon, which they find through its state dir or --url (dial.go): turn
// (turn.go), annotations (annotations.go), diff and edits (diff.go,
// edits.go), sessions (sessions.go), rewind (rewind.go), draft (draft.go) and
// health (dial.go). service
// (service.go) writes a systemd user unit or a launchd agent and version
// (version.go) reads the build information.
//
// Every flag of serve can also be set through an environment variable
// named CHANGESETD_ and the flag's name in capitals with dashes as
// underscores (CHANGESETD_ALLOW_HOST for --allow-host); a flag on the
// command line wins over the variable. The client commands read only the
// variables of the flags that say how to reach the daemon (env.go,
// dialEnv). docs/cli.md is the reference.
package main
