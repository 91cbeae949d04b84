package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

const serviceUsage = `Usage:
  changesetd service install [--listen ADDR] [--state-dir DIR] [--manager systemd|launchd] [DIR...]
  changesetd service uninstall [--manager systemd|launchd]
  changesetd service status [--manager systemd|launchd]

Starts the daemon at login: "install" writes a systemd user unit
(~/.config/systemd/user/changesetd.service) on Linux or a launchd agent
(~/Library/LaunchAgents/io.github.changesetd.plist) on macOS that runs
"changesetd serve" with this binary, then enables and starts it with
systemctl --user or launchctl when they are there (it says so either way).
Sessions made by agents' hooks and earlier runs are restored at each start;
each DIR is served as with "serve DIR". "uninstall" stops the service and
removes the file; "status" shows the file and what the service manager
says.
`

// Names of the service in each manager.
const (
	systemdUnit   = "changesetd.service"
	launchdLabel  = "io.github.changesetd"
	managerSystem = "systemd"
	managerLaunch = "launchd"
)

// serviceCmd implements "changesetd service install|uninstall|status".
func serviceCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name := "changesetd service"
	if len(args) == 0 || (args[0] != "install" && args[0] != "uninstall" && args[0] != "status") {
		fmt.Fprint(stderr, serviceUsage)
		return 2
	}
	verb := args[0]
	name += " " + verb
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	manager := fs.String("manager", defaultManager(), "the service manager to write for: systemd or launchd")
	listen := fs.String("listen", "127.0.0.1:7878", "install only: the address the daemon listens on")
	stateDir := fs.String("state-dir", "", "install only: the daemon's state dir (default: the daemon's own default)")
	fs.Usage = func() {
		fmt.Fprint(stderr, serviceUsage, "\nFlags:\n")
		printDefaults(fs, func(string) bool { return false })
	}
	flags, dirs := splitInterspersed(fs, args[1:])
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	dirs = append(dirs, fs.Args()...)
	if *manager != managerSystem && *manager != managerLaunch {
		fmt.Fprintf(stderr, "%s: --manager %q: want systemd or launchd\n", name, *manager)
		return 2
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if verb != "install" && (len(dirs) > 0 || given["listen"] || given["state-dir"]) {
		fmt.Fprintf(stderr, "%s: directories, --listen and --state-dir go with install\n", name)
		return 2
	}
	home, err := os.UserHomeDir()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	svc := service{manager: *manager, home: home, stdout: stdout, stderr: stderr, ctx: ctx}
	switch verb {
	case "install":
		bin, err := os.Executable()
		if err == nil {
			bin, err = filepath.EvalSymlinks(bin)
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: cannot find this binary: %v\n", name, err)
			return 1
		}
		if goRunBinary(bin) {
			fmt.Fprintf(stderr, "%s: this binary is a temporary one of \"go run\" (%s), which the service could not start later; install it first (go install ./cmd/changesetd) and run that one\n", name, bin)
			return 1
		}
		serveArgs := []string{"serve", "--listen", *listen}
		if *stateDir != "" {
			abs, err := filepath.Abs(*stateDir)
			if err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", name, err)
				return 1
			}
			serveArgs = append(serveArgs, "--state-dir", abs)
		}
		for _, d := range dirs {
			abs, err := filepath.Abs(d)
			if err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", name, err)
				return 1
			}
			serveArgs = append(serveArgs, abs)
		}
		err = svc.install(append([]string{bin}, serveArgs...))
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
	case "uninstall":
		if err := svc.uninstall(); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
	case "status":
		return svc.status()
	}
	return 0
}

// goRunBinary reports whether path is a binary "go run" built in its
// temporary work directory, removed when it exits.
func goRunBinary(path string) bool {
	return strings.Contains(filepath.ToSlash(path), "/go-build") && strings.Contains(filepath.ToSlash(path), "/exe/")
}

func defaultManager() string {
	if runtime.GOOS == "darwin" {
		return managerLaunch
	}
	return managerSystem
}

// service writes and drives one service manager's definition of the
// daemon.
type service struct {
	manager        string
	home           string
	stdout, stderr io.Writer
	ctx            context.Context
}

// path is the file the service is defined in.
func (s service) path() string {
	if s.manager == managerLaunch {
		return filepath.Join(s.home, "Library", "LaunchAgents", launchdLabel+".plist")
	}
	config := os.Getenv("XDG_CONFIG_HOME")
	if config == "" {
		config = filepath.Join(s.home, ".config")
	}
	return filepath.Join(config, "systemd", "user", systemdUnit)
}

func (s service) install(argv []string) error {
	var body []byte
	if s.manager == managerLaunch {
		body = launchdPlist(argv, filepath.Join(s.home, "Library", "Logs", "changesetd.log"))
	} else {
		body = systemdUnitFile(argv)
	}
	p := s.path()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if s.manager == managerLaunch {
		if err := os.MkdirAll(filepath.Join(s.home, "Library", "Logs"), 0o755); err != nil {
			return err
		}
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, body, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	fmt.Fprintf(s.stdout, "wrote %s\n", p)
	if s.manager == managerLaunch {
		target := "gui/" + strconv.Itoa(os.Getuid())
		// bootout first, so that a second install loads the new file.
		s.manage(true, "launchctl", "bootout", target+"/"+launchdLabel)
		return s.manage(false, "launchctl", "bootstrap", target, p)
	}
	err := s.manage(false, "systemctl", "--user", "daemon-reload")
	if err == nil {
		err = s.manage(false, "systemctl", "--user", "enable", "--now", systemdUnit)
	}
	if err != nil {
		// Typically no user manager runs here (a container, or a shell
		// without a login session): the unit is in place for the next
		// login.
		return fmt.Errorf("%w; the unit is written, but systemd did not start it: in a login session run \"systemctl --user enable --now %s\" (and \"loginctl enable-linger\" to keep it running after logout)", err, systemdUnit)
	}
	return nil
}

func (s service) uninstall() error {
	p := s.path()
	if s.manager == managerLaunch {
		s.manage(true, "launchctl", "bootout", "gui/"+strconv.Itoa(os.Getuid())+"/"+launchdLabel)
	} else {
		s.manage(true, "systemctl", "--user", "disable", "--now", systemdUnit)
	}
	err := os.Remove(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(s.stdout, "%s was not installed\n", p)
		return nil
	case err != nil:
		return err
	}
	fmt.Fprintf(s.stdout, "removed %s\n", p)
	if s.manager == managerSystem {
		s.manage(true, "systemctl", "--user", "daemon-reload")
	}
	return nil
}

// status prints whether the file is there and what the manager says of
// the service; its exit code is 0 when the file is installed, 1 when not.
func (s service) status() int {
	p := s.path()
	if _, err := os.Stat(p); err != nil {
		fmt.Fprintf(s.stdout, "not installed (%s does not exist); \"changesetd service install\" writes it\n", p)
		return 1
	}
	fmt.Fprintf(s.stdout, "installed: %s\n", p)
	if s.manager == managerLaunch {
		s.manage(true, "launchctl", "print", "gui/"+strconv.Itoa(os.Getuid())+"/"+launchdLabel)
	} else {
		s.manage(true, "systemctl", "--user", "status", "--no-pager", systemdUnit)
	}
	return 0
}

// manage runs a service manager's command when it is installed, saying
// what it runs; without it, it says what to run once it is. With
// tolerant, the command's failure is reported, not returned (stopping a
// service that is not running, say).
func (s service) manage(tolerant bool, name string, args ...string) error {
	line := name + " " + strings.Join(args, " ")
	if _, err := exec.LookPath(name); err != nil {
		fmt.Fprintf(s.stdout, "%s not found: not run: %s\n", name, line)
		return nil
	}
	fmt.Fprintf(s.stdout, "running: %s\n", line)
	cmd := exec.CommandContext(s.ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	s.stdout.Write(out.Bytes())
	if err != nil {
		if tolerant {
			fmt.Fprintf(s.stdout, "(%s: %v)\n", name, err)
			return nil
		}
		return fmt.Errorf("%s: %v", line, err)
	}
	return nil
}

// systemdUnitFile is a user unit that runs argv, restarted when it fails
// but not on a usage error (2) or a damaged state database (3), which a
// restart cannot mend.
func systemdUnitFile(argv []string) []byte {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = systemdQuote(a)
	}
	return []byte(`# Written by "changesetd service install"; "changesetd service uninstall" removes it.
[Unit]
Description=changesetd: live git changesets for review
Documentation=https://github.com/changesetd/changesetd/blob/main/docs/deployment.md

[Service]
ExecStart=` + strings.Join(quoted, " ") + `
Restart=on-failure
RestartPreventExitStatus=2 3

[Install]
WantedBy=default.target
`)
}

// systemdQuote quotes one ExecStart word: systemd splits on spaces, and
// expands % specifiers and $ variables, so those are escaped.
func systemdQuote(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	s = strings.ReplaceAll(s, "$", "$$")
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// launchdPlist is a launch agent that runs argv at login and again when it
// exits with a failure, logging to logFile.
func launchdPlist(argv []string, logFile string) []byte {
	esc := func(s string) string {
		var b strings.Builder
		xml.EscapeText(&b, []byte(s))
		return b.String()
	}
	var args strings.Builder
	for _, a := range argv {
		fmt.Fprintf(&args, "\t\t<string>%s</string>\n", esc(a))
	}
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by "changesetd service install"; "changesetd service uninstall" removes it. -->
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>` + launchdLabel + `</string>
	<key>ProgramArguments</key>
	<array>
` + args.String() + `	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>StandardOutPath</key>
	<string>` + esc(logFile) + `</string>
	<key>StandardErrorPath</key>
	<string>` + esc(logFile) + `</string>
</dict>
</plist>
`)
}
