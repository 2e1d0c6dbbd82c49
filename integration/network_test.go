package integration

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testHost is a host the test makes: a network namespace joined to this
// one by a veth pair on 10.203.K.0/30, with an HTTP server on
// 10.203.K.2:8080 that answers every GET with "test-host-ok". Everything
// is removed when the test ends. No other address is ever contacted.
type testHost struct {
	ip   string
	port int
	dir  string // what the server serves: a test may add files
}

func newTestHost(t *testing.T) testHost {
	t.Helper()
	needRoot(t)
	for _, tool := range []string{"ip", "unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s on this host: %v", tool, err)
		}
	}
	k := 1 + rand.IntN(250)
	id := fmt.Sprintf("%04x", rand.IntN(1<<16))
	vh, vn := "wh"+id, "wn"+id
	// The namespace is held by a process of ours, not named under
	// /run/netns (naming one makes ip(8) mount on the host): it goes when
	// the holder goes, and the veth pair with it.
	holder := exec.Command("unshare", "--net", "--", "sleep", "600")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	pid := fmt.Sprint(holder.Process.Pid)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	in := func(args ...string) { t.Helper(); run(append([]string{"nsenter", "-t", pid, "-n", "--"}, args...)...) }
	// unshare needs a moment to enter its namespace.
	for i := 0; i < 100; i++ {
		self, _ := os.Readlink("/proc/self/ns/net")
		other, _ := os.Readlink("/proc/" + pid + "/ns/net")
		if other != "" && other != self {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	run("ip", "link", "add", vh, "type", "veth", "peer", "name", vn)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", vh).Run() })
	run("ip", "link", "set", vn, "netns", pid)
	run("ip", "addr", "add", fmt.Sprintf("10.203.%d.1/30", k), "dev", vh)
	run("ip", "link", "set", vh, "up")
	in("ip", "link", "set", "lo", "up")
	in("ip", "addr", "add", fmt.Sprintf("10.203.%d.2/30", k), "dev", vn)
	in("ip", "link", "set", vn, "up")
	dir := t.TempDir()
	h := testHost{ip: fmt.Sprintf("10.203.%d.2", k), port: 8080, dir: dir}
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("test-host-ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := exec.Command("nsenter", "-t", pid, "-n", "--", "python3", "-m", "http.server", "8080", "--bind", h.ip, "--directory", dir)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", h.ip, h.port), time.Second)
		if err == nil {
			c.Close()
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("the test host's server never came up: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h testHost) url(name string) string { return fmt.Sprintf("http://%s:%d/", name, h.port) }

// curl runs curl inside a sandbox with the given ward flags and prints the
// HTTP code (000 when the connection failed).
func curlIn(t *testing.T, flags []string, curlArgs ...string) result {
	t.Helper()
	args := append([]string{"run"}, flags...)
	args = append(args, "--", "curl", "-s", "-o", "/dev/null", "-m", "10", "-w", "%{http_code}")
	return run(t, opts{}, append(args, curlArgs...)...)
}

func TestProxyServesAllowedNameOverHTTPConnectAndSOCKS(t *testing.T) {
	h := newTestHost(t)
	flags := []string{"--allow-network=web.test", "--add-host=web.test:" + h.ip, "--block-internal=false"}
	for name, extra := range map[string][]string{
		"plain HTTP proxy": nil,
		"CONNECT":          {"--proxytunnel"},
		"SOCKS5":           {"--socks5-hostname", "127.0.0.1:1080"},
	} {
		r := curlIn(t, flags, append(extra, h.url("web.test"))...)
		if strings.TrimSpace(r.stdout) != "200" {
			t.Errorf("%s: got %q, want 200\n%s", name, r.stdout, r)
		}
	}
}

func TestProxyBlocksAndLogsAndReports(t *testing.T) {
	h := newTestHost(t)
	report := filepath.Join(t.TempDir(), "r.json")
	base := []string{"--report=" + report, "--log-network", "--add-host=web.test:" + h.ip, "--add-host=other.test:" + h.ip, "--block-internal=false"}
	for _, tc := range []struct {
		name   string
		flags  []string
		url    string
		reason string
	}{
		{"a name not listed", []string{"--allow-network=web.test"}, h.url("other.test"), "not in allow list"},
		{"block_internal refuses a private answer", []string{"--allow-network=web.test", "--block-internal=true"}, h.url("web.test"), "resolves to internal address"},
		{"a bare IP not listed", []string{"--allow-network=web.test"}, h.url(h.ip), "IP address not in allow list"},
		{"deny beats allow", []string{"--allow-network=*.test", "--deny-network=web.test"}, h.url("web.test"), "denied by pattern"},
		{"allow_ports=443 blocks 8080", []string{"--allow-network=web.test", "--allow-port=443"}, h.url("web.test"), "port 8080 not in allow_ports"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := curlIn(t, append(append([]string{}, base...), tc.flags...), "-i", tc.url)
			if strings.TrimSpace(r.stdout) != "403" {
				t.Errorf("got %q, want 403\n%s", r.stdout, r)
			}
			if !strings.Contains(r.stderr, "[SANDBOX] Network attempt blocked:") || !strings.Contains(r.stderr, tc.reason) {
				t.Errorf("stderr lacks the blocked line with %q\n%s", tc.reason, r)
			}
			rep := readReport(t, report, r)
			ev, _ := rep["network"].([]any)
			if len(ev) != 1 || ev[0].(map[string]any)["action"] != "blocked" {
				t.Errorf("report network = %v", rep["network"])
			}
		})
	}
	if r := curlIn(t, append(base, "--allow-network=*.test"), h.url("web.test")); strings.TrimSpace(r.stdout) != "200" {
		t.Errorf("*.test pattern: got %q\n%s", r.stdout, r)
	}
}

// TestClientIgnoringProxyVarsWorksOnAllowedPortsOnly: a program that
// ignores the proxy variables (a raw socket) reaches an allowed name
// through ward's stub resolver and the proxy, on an allowed port; a name
// not allowed gets its connection closed, another port no listener, and a
// literal address no route.
func TestClientIgnoringProxyVarsWorksOnAllowedPortsOnly(t *testing.T) {
	h := newTestHost(t)
	probe := `import socket, sys
def get(host, port):
    try:
        s = socket.create_connection((host, port), timeout=5)
        s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        data = b""
        while True:
            b = s.recv(4096)
            if not b: break
            data += b
        return "body" if b"test-host-ok" in data else "closed"
    except OSError as e:
        return "error %d" % e.errno
print("allowed", get("web.test", 8080))
print("unlisted", get("other.test", 8080))
print("otherport", get("web.test", 8081))
print("literal", get("` + h.ip + `", 8080))
`
	r := run(t, opts{stdin: probe}, "run", "--allow-network=web.test", "--add-host=web.test:"+h.ip, "--add-host=other.test:"+h.ip,
		"--block-internal=false", "--allow-port=8080", "--", "python3", "-")
	for _, want := range []string{"allowed body", "unlisted closed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q\n%s", want, r)
		}
	}
	// No listener (111), or, with Landlock ABI 4+, the port is not among
	// those the program may connect to (13, docs/security.md).
	if !strings.Contains(r.stdout, "otherport error 111") && !strings.Contains(r.stdout, "otherport error 13\n") {
		t.Errorf("stdout lacks otherport error 111 or 13\n%s", r)
	}
	if strings.Contains(r.stdout, "literal body") {
		t.Errorf("a literal address left the sandbox\n%s", r)
	}
}

// TestProxyModeListensOnNoHostPort: the proxy is reached only through
// the init's relay; nothing new listens on the host's TCP ports.
func TestProxyModeListensOnNoHostPort(t *testing.T) {
	before := listeningPorts(t)
	p := startWard(t, opts{}, "run", "--allow-network=web.test", "--", "sleep", "2")
	time.Sleep(700 * time.Millisecond)
	during := listeningPorts(t)
	p.wait()
	for port := range during {
		if !before[port] {
			t.Errorf("port %s began listening on the host during a proxy-mode run", port)
		}
	}
}

func listeningPorts(t *testing.T) map[string]bool {
	t.Helper()
	ports := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) > 3 && fields[3] == "0A" { // TCP_LISTEN
				ports[fields[1]] = true
			}
		}
	}
	return ports
}

// TestProxySurvivesABurstGarbageAndTheByteCap: 200 connections at once
// (over the proxy's 64: the rest are refused), garbage on both proxy
// ports, then a normal request still works; and --network-max-bytes cuts
// a download short.
func TestProxySurvivesABurstGarbageAndTheByteCap(t *testing.T) {
	h := newTestHost(t)
	probe := `import socket, threading
def req():
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
        s.sendall(b"GET http://web.test:8080/ HTTP/1.1\r\nHost: web.test:8080\r\n\r\n")
        return b"test-host-ok" in s.recv(4096) or True
    except OSError:
        return False
threads = [threading.Thread(target=req) for _ in range(200)]
for t in threads: t.start()
for t in threads: t.join()
for port, junk in ((3128, b"\x16\x03\x01\x00garbage\r\n\r\n"), (1080, b"\x05\xff\x00\x00junk")):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(junk)
    try: s.recv(100)
    except OSError: pass
    s.close()
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"GET http://web.test:8080/ HTTP/1.0\r\nHost: web.test:8080\r\n\r\n")
data = b""
while True:
    b = s.recv(4096)
    if not b: break
    data += b
print("after", "ok" if b"test-host-ok" in data else "broken")
`
	r := run(t, opts{stdin: probe}, "run", "--processes=512", "--allow-network=web.test", "--add-host=web.test:"+h.ip, "--block-internal=false", "--", "python3", "-")
	if !strings.Contains(r.stdout, "after ok") {
		t.Errorf("the proxy did not survive\n%s", r)
	}
	capped := curlIn(t, []string{"--allow-network=web.test", "--add-host=web.test:" + h.ip, "--block-internal=false", "--network-max-bytes=100"}, h.url("web.test"))
	if strings.TrimSpace(capped.stdout) == "200" {
		t.Errorf("a 100-byte cap let a whole response through\n%s", capped)
	}
}
