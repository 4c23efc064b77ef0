package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	rpmutils "github.com/sassoftware/go-rpmutils"
)

// buildTestPackage builds the package of format from the test binary into a temp dir.
func buildTestPackage(t *testing.T, format string) string {
	t.Helper()
	in := packageInput{Bin: testBin, Root: "..", Scripts: "scripts", Arch: runtime.GOARCH, Version: testVersion}
	path, err := buildPackage(in, format, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// wantFiles is every path the packages install, with its permission bits.
var wantFiles = map[string]os.FileMode{
	pkgBinary:  0o755,
	pkgConfig:  0o644,
	pkgUnit:    0o644,
	pkgLicence: 0o644,
	pkgDataDir: 0o750 | os.ModeDir,
}

// wantScripts are the maintainer scripts, by the name dpkg gives them.
var wantScripts = map[string]string{"postinst": "postinstall.sh", "prerm": "preremove.sh", "postrm": "postremove.sh"}

// needTool ends the test when name is not installed: it skips locally, and fails under CI=true
// (the rule of the product module's internal/testutil.MissingTool, which this module cannot
// import): .ci/run installs every tool, so a skip there would hide an unchecked package.
func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	if ci, err := strconv.ParseBool(os.Getenv("CI")); err == nil && ci {
		t.Fatalf("%s is not installed; CI must run this test (.ci/run installs it)", name)
	}
	t.Skipf("%s is not installed; skipped (under CI=true it fails)", name)
}

func output(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

func TestDeb_HoldsTheFilesModesConffileScriptsAndTheBinarysVersion(t *testing.T) {
	needTool(t, "dpkg-deb")
	deb := buildTestPackage(t, "deb")

	// dpkg-deb -c: "drwxr-x--- root/root 0 2026-12-02 13:57 ./var/lib/outbox/"
	listed := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(output(t, "dpkg-deb", "-c", deb)), "\n") {
		f := strings.Fields(line)
		listed[strings.TrimSuffix(strings.TrimPrefix(f[len(f)-1], "."), "/")] = f[0]
	}
	for path, mode := range wantFiles {
		if got, want := listed[path], mode.String(); got != want && !(mode.IsDir() && got == "d"+want[1:]) {
			t.Errorf("%s: mode %q in the .deb, want %q", path, got, want)
		}
	}
	binBytes, _ := os.ReadFile(testBin)
	packed, err := exec.Command("sh", "-c", "dpkg-deb --fsys-tarfile "+deb+" | tar -xO ./usr/bin/outbox").Output()
	if err != nil || !bytes.Equal(packed, binBytes) {
		t.Errorf("the .deb's /usr/bin/outbox is not the binary it was built from (err %v)", err)
	}

	info := output(t, "dpkg-deb", "-I", deb)
	for _, want := range []string{"Package: outbox", "Version: 1.2.3~rc1-1", "Architecture: " + runtime.GOARCH, "conffiles"} {
		if !strings.Contains(info, want) {
			t.Errorf("dpkg-deb -I does not show %q:\n%s", want, info)
		}
	}
	ctrl := t.TempDir()
	output(t, "dpkg-deb", "-e", deb, ctrl)
	conffiles, _ := os.ReadFile(filepath.Join(ctrl, "conffiles"))
	if strings.TrimSpace(string(conffiles)) != pkgConfig {
		t.Errorf("conffiles = %q, want only %s (kept on upgrade)", conffiles, pkgConfig)
	}
	for name, src := range wantScripts {
		got, err := os.ReadFile(filepath.Join(ctrl, name))
		want, _ := os.ReadFile(filepath.Join("scripts", src))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not scripts/%s (err %v)", name, src, err)
		}
		if fi, err := os.Stat(filepath.Join(ctrl, name)); err == nil && fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s is not executable: %v", name, fi.Mode())
		}
	}
}

func TestRpm_HoldsTheFilesModesConfigNoreplaceScriptsAndTheBinarysVersion(t *testing.T) {
	f, err := os.Open(buildTestPackage(t, "rpm"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rpm, err := rpmutils.ReadRpm(f)
	if err != nil {
		t.Fatal(err)
	}
	for tag, want := range map[int]string{rpmutils.NAME: "outbox", rpmutils.VERSION: "1.2.3~rc1", rpmutils.RELEASE: "1", rpmutils.LICENSE: "Apache-2.0"} {
		if got, err := rpm.Header.GetString(tag); err != nil || got != want {
			t.Errorf("rpm tag %d = %q (%v), want %q", tag, got, err, want)
		}
	}
	files, err := rpm.Header.GetFiles()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]rpmutils.FileInfo{}
	for _, fi := range files {
		got[fi.Name()] = fi
	}
	for path, mode := range wantFiles {
		fi, ok := got[path]
		if !ok {
			t.Errorf("%s is not in the .rpm", path)
			continue
		}
		if perm := os.FileMode(fi.Mode()) & os.ModePerm; perm != mode.Perm() {
			t.Errorf("%s: mode %v in the .rpm, want %v", path, perm, mode.Perm())
		}
		isDir := fi.Mode()&0o170000 == 0o040000
		if isDir != mode.IsDir() {
			t.Errorf("%s: directory %v in the .rpm, want %v", path, isDir, mode.IsDir())
		}
		config := fi.Flags()&rpmutils.RPMFILE_CONFIG != 0 && fi.Flags()&rpmutils.RPMFILE_NOREPLACE != 0
		if config != (path == pkgConfig) {
			t.Errorf("%s: %%config(noreplace) %v, want %v", path, config, path == pkgConfig)
		}
	}
	for tag, src := range map[int]string{rpmutils.POSTIN: "postinstall.sh", rpmutils.PREUN: "preremove.sh", rpmutils.POSTUN: "postremove.sh"} {
		want, _ := os.ReadFile(filepath.Join("scripts", src))
		if got, err := rpm.Header.GetString(tag); err != nil || strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
			t.Errorf("rpm script tag %d is not scripts/%s (err %v)", tag, src, err)
		}
	}
}

// noInstallEnv names the variable that keeps the tests from installing the .deb on the host:
// as root on Debian, `make test` otherwise installs and purges a real outbox package.
const noInstallEnv = "OUTBOX_TEST_NO_INSTALL"

// installRefusal says why the package must not be installed on this host, or "" when it may:
// noInstallEnv set to a true value, or not root.
func installRefusal(noInstall string, euid int) string {
	if on, err := strconv.ParseBool(noInstall); err == nil && on {
		return noInstallEnv + "=" + noInstall + ": the .deb is not installed on this host"
	}
	if euid != 0 {
		return "installing a package needs root (CI runs as root)"
	}
	return ""
}

func TestInstallRefusal_FollowsTheVariableAndRoot(t *testing.T) {
	tests := []struct {
		name      string
		noInstall string
		euid      int
		refused   bool
	}{
		{"root with the variable unset installs", "", 0, false},
		{"root with OUTBOX_TEST_NO_INSTALL=1 does not", "1", 0, true},
		{"root with OUTBOX_TEST_NO_INSTALL=true does not", "true", 0, true},
		{"root with OUTBOX_TEST_NO_INSTALL=0 installs", "0", 0, false},
		{"a user never installs", "", 1000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := installRefusal(tt.noInstall, tt.euid); (got != "") != tt.refused {
				t.Errorf("installRefusal(%q, %d) = %q, want refused=%v", tt.noInstall, tt.euid, got, tt.refused)
			}
		})
	}
}

// On Debian as root (CI), the .deb installs, its binary runs, its unit verifies, and it removes;
// OUTBOX_TEST_NO_INSTALL=1 skips it.
func TestDeb_InstallsRunsVerifiesAndRemoves(t *testing.T) {
	if why := installRefusal(os.Getenv(noInstallEnv), os.Geteuid()); why != "" {
		t.Skip(why)
	}
	needTool(t, "dpkg")
	needTool(t, "systemd-analyze")
	if exec.Command("dpkg", "-s", "outbox").Run() == nil {
		t.Skip("an outbox package is installed on this machine; not replacing it")
	}
	deb := buildTestPackage(t, "deb")
	output(t, "dpkg", "-i", deb)
	removed := false
	t.Cleanup(func() {
		if !removed {
			_ = exec.Command("dpkg", "--purge", "outbox").Run()
		}
	})
	if out := output(t, pkgBinary, "version"); !strings.HasPrefix(out, "outbox "+testVersion+"\n") {
		t.Errorf("%s version:\n%s\nwant outbox %s", pkgBinary, out, testVersion)
	}
	if out, err := exec.Command("systemd-analyze", "verify", pkgUnit).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", pkgUnit, err, out)
	}
	if st, err := os.Stat(pkgDataDir); err != nil || !st.IsDir() {
		t.Errorf("%s after install: %v", pkgDataDir, err)
	}
	output(t, "dpkg", "-r", "outbox")
	removed = true
	if _, err := os.Stat(pkgBinary); err == nil {
		t.Errorf("%s is still there after dpkg -r", pkgBinary)
	}
	if _, err := os.Stat(pkgConfig); err != nil {
		t.Errorf("dpkg -r removed the conffile %s (only --purge should): %v", pkgConfig, err)
	}
	output(t, "dpkg", "--purge", "outbox")
	if status := output(t, "sh", "-c", "dpkg-query -W -f='${Status}' outbox 2>/dev/null || true"); regexp.MustCompile(`install ok installed`).MatchString(status) {
		t.Errorf("outbox still installed after purge: %s", status)
	}
}
