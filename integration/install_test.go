package integration

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// hostHasAppArmor is make install's own test for "AppArmor is present".
func hostHasAppArmor() bool {
	for _, d := range []string{"/sys/kernel/security/apparmor", "/etc/apparmor.d"} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// TestMakeInstall runs `make install` and `make uninstall` into a DESTDIR
// under the test's temp dir (never the host's / or /usr/local), once as
// this host decides about AppArmor and once forced the other way, and
// checks what lands where, with which modes. An apparmor_parser stub first
// on PATH proves nothing is loaded into the kernel when DESTDIR is set.
func TestMakeInstall(t *testing.T) {
	needRoot(t)
	if os.Getenv("WARD_VM") != "" {
		t.Skip("make install is tested on the host, not in the VM (no source tree there)")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "Makefile")); err != nil {
		t.Skipf("no Makefile in %s (the tests run outside a checkout): %v", root, err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make not found: %v", err)
	}

	stubDir := t.TempDir()
	loaded := filepath.Join(stubDir, "apparmor_parser-was-run")
	stub := "#!/bin/sh\necho \"$@\" >> '" + loaded + "'\nexit 0\n"
	if err := os.WriteFile(filepath.Join(stubDir, "apparmor_parser"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	// The environment of `make test`, less what would steer this make:
	// install variables set outside, and the parent make's flags (jobserver).
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DESTDIR", "PREFIX", "BINDIR", "MANDIR", "BASHCOMPDIR", "ZSHCOMPDIR", "FISHCOMPDIR",
			"APPARMOR", "APPARMORDIR", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "GNUMAKEFLAGS":
			continue
		case "PATH":
			kv = "PATH=" + stubDir + ":" + strings.TrimPrefix(kv, "PATH=")
		}
		env = append(env, kv)
	}
	makeRun := func(t *testing.T, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "make", append([]string{"-C", root}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	host := hostHasAppArmor()
	other := "APPARMOR=yes"
	if host {
		other = "APPARMOR=no"
	}
	for _, c := range []struct {
		name     string
		args     []string
		apparmor bool
	}{
		{"as-this-host", nil, host},
		{other, []string{other}, !host},
	} {
		t.Run(c.name, func(t *testing.T) {
			dest := t.TempDir()
			out := makeRun(t, append([]string{"install", "DESTDIR=" + dest, "PREFIX=/usr/local"}, c.args...)...)

			checkInstalledBinaries(t, root, dest, out)
			checkInstalledDocs(t, root, dest)
			checkInstalledProfile(t, dest, out, c.apparmor)

			out = makeRun(t, "uninstall", "DESTDIR="+dest, "PREFIX=/usr/local")
			var left []string
			err = filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					left = append(left, p)
				}
				return err
			})
			if err != nil {
				t.Error(err)
			}
			if len(left) > 0 {
				t.Errorf("make uninstall left files behind:\n%s\n%s", strings.Join(left, "\n"), out)
			}
			if b, err := os.ReadFile(loaded); err == nil {
				t.Errorf("apparmor_parser was run with DESTDIR set: %s", b)
			}
		})
	}
}

// checkInstalledBinaries: ward at 0755, no setuid or setgid bit, the one
// make built, and it runs; ward-oci a link to it answering as the OCI runtime.
func checkInstalledBinaries(t *testing.T, root, dest, out string) {
	t.Helper()
	bin := filepath.Join(dest, "usr/local/bin/ward")
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatalf("binary not installed: %v\n%s", err, out)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		t.Errorf("%s: mode %v, want -rwxr-xr-x (0755, no setuid/setgid)", bin, fi.Mode())
	}
	built, err := os.ReadFile(filepath.Join(root, "bin/ward"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(bin); err != nil || !bytes.Equal(got, built) {
		t.Errorf("%s is not bin/ward (err %v)", bin, err)
	}
	if o, err := exec.Command(bin, "version").CombinedOutput(); err != nil {
		t.Errorf("installed ward version: %v\n%s", err, o)
	}
	// ward-oci: a link to ward beside it, answering as the OCI runtime.
	oci := filepath.Join(dest, "usr/local/bin/ward-oci")
	if target, err := os.Readlink(oci); err != nil || target != "ward" {
		t.Errorf("%s: link to %q (err %v), want a link to ward", oci, target, err)
	}
	if o, err := exec.Command(oci, "--version").CombinedOutput(); err != nil || !strings.HasPrefix(string(o), "ward-oci version ") {
		t.Errorf("installed ward-oci --version: %v\n%s", err, o)
	}
}

// checkInstalledDocs: every man page make man wrote, 0644, ward.1 and
// ward-run.1 among them; the completions where bash-completion, zsh and
// fish look for them.
func checkInstalledDocs(t *testing.T, root, dest string) {
	t.Helper()
	want, err := filepath.Glob(filepath.Join(root, "bin/man/*.1"))
	if err != nil || len(want) == 0 {
		t.Fatalf("no man pages in bin/man (err %v)", err)
	}
	manDir := filepath.Join(dest, "usr/local/share/man/man1")
	var got []string
	for _, p := range want {
		got = append(got, filepath.Base(p))
		checkFile(t, filepath.Join(manDir, filepath.Base(p)), 0o644, ".TH \"WARD")
	}
	for _, name := range []string{"ward.1", "ward-run.1"} {
		if !slices.Contains(got, name) {
			t.Errorf("man page %s missing from bin/man: %v", name, got)
		}
	}

	// Completions where bash-completion, zsh and fish look for them.
	checkFile(t, filepath.Join(dest, "usr/local/share/bash-completion/completions/ward"), 0o644, "__start_ward")
	checkFile(t, filepath.Join(dest, "usr/local/share/zsh/site-functions/_ward"), 0o644, "#compdef ward")
	checkFile(t, filepath.Join(dest, "usr/local/share/fish/vendor_completions.d/ward.fish"), 0o644, "complete -c ward")
}

// checkInstalledProfile: the AppArmor profile, attached to the installed
// path, only where AppArmor is (apparmor says whether it should be).
func checkInstalledProfile(t *testing.T, dest, out string, apparmor bool) {
	t.Helper()
	profile := filepath.Join(dest, "etc/apparmor.d/ward")
	if apparmor {
		text := checkFile(t, profile, 0o644, "profile ward /usr/local/bin/ward flags=(unconfined) {")
		for _, s := range []string{"abi <abi/4.0>,", "  userns,"} {
			if !strings.Contains(text, s) {
				t.Errorf("%s lacks %q:\n%s", profile, s, text)
			}
		}
		if strings.Contains(text, "@BINDIR@") {
			t.Errorf("%s still has @BINDIR@:\n%s", profile, text)
		}
		if !strings.Contains(out, "AppArmor: profile installed as "+profile+", not loaded (DESTDIR is set") {
			t.Errorf("make install did not say what it did with the profile:\n%s", out)
		}
	} else {
		if _, err := os.Lstat(profile); err == nil {
			t.Errorf("%s installed where AppArmor is not present", profile)
		}
		if !strings.Contains(out, "AppArmor: not present here") {
			t.Errorf("make install did not say it skipped the profile:\n%s", out)
		}
	}
}

// checkFile fails the test unless path is a regular file with mode perm
// that contains s; it returns the file's text.
func checkFile(t *testing.T, path string, perm os.FileMode, s string) string {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("not installed: %v", err)
		return ""
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != perm {
		t.Errorf("%s: mode %v, want a file with %v", path, fi.Mode(), perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return ""
	}
	if !strings.Contains(string(b), s) {
		t.Errorf("%s does not contain %q", path, s)
	}
	return string(b)
}
