package nsexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/wardbox/ward/seccomp"
)

// FuzzMsgDecode: whatever a line of the protocol holds, decoding it into
// a Msg (as both sides do) fails cleanly or gives a message whose encoding
// is stable: encoded, decoded and encoded again, the same bytes.
func FuzzMsgDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"error","step":"build-root","what":"mount","path":"/x","errno":13}`,
		`{"type":"error","step":"dns-stub","msg":"listen udp 127.0.0.1:53: bind: address already in use","errno":98}`,
		`{"type":"gate_error","id":3,"gate_step":8,"errno":1,"detail":2}`,
		`{"type":"listener","fds":1}`,
		`{"type":"ready","steps":[{"step":"a","us":12,"side":"init"}],"start_us":1,"config_us":2}`,
		`{"type":"exit","exit":{"code":0,"signal":0,"user_us":1,"sys_us":2,"maxrss_kb":3,"reaped":1,"denied":[{"syscall":"mount","errno":"EPERM","count":2}]}}`,
		`{"type":"started","pid":2,"id":7}`,
		`{"type":"exit","exit":{"code":-1,"signal":9,"user_us":0,"sys_us":0,"maxrss_kb":0,"nvcsw":0,"nivcsw":0,"reaped":3,"wall_us":5,"timed_out":true}}`,
		`{"type":1}`, `[]`, `null`, `{"steps":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Msg
		if json.NewDecoder(bytes.NewReader(data)).Decode(&m) != nil {
			return
		}
		once, err := json.Marshal(&m)
		if err != nil {
			t.Fatalf("a decoded message does not encode: %v\n%q", err, data)
		}
		var m2 Msg
		if err := json.Unmarshal(once, &m2); err != nil {
			t.Fatalf("an encoded message does not decode: %v\n%s", err, once)
		}
		twice, _ := json.Marshal(&m2)
		if !bytes.Equal(once, twice) {
			t.Fatalf("encoding not stable:\n%s\n%s", once, twice)
		}
	})
}

// gateSpec is a config with something in every field the early child
// takes.
func gateSpec() *Spec {
	return &Spec{
		Args: []string{"prog", "", "-x=1"}, Env: []string{"A=1", "PATH=/opt/bin:/bin"}, Dir: "/work dir",
		UID: 1000, GID: 1001, NoFile: 1024, NoFileHard: 4096, CPUSeconds: 3, FileSize: 1 << 20,
		KeepGroups: true, NestUserns: true, NProc: 64, DataBytes: 1 << 30, TTY: true, CgroupFDs: 2,
		Seccomp: []seccomp.Program{bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 3), make([]byte, 8)}, SeccompNotify: "default",
	}
}

// FuzzGateUnpack: whatever bytes the early child receives as its config
// (gate_linux.c's ward_unpack_gate, which ctest/gate_test.c also runs
// under ASan and UBSan), it refuses them with EBADMSG or reads a config
// that, packed again and read back, is the same config.
func FuzzGateUnpack(f *testing.F) {
	for _, landlock := range []bool{false, true} {
		fd := -1
		if landlock {
			fd = 5
		}
		msg, err := packGateWith(gateSpec(), fd)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(msg, landlock)
		f.Add(msg[:len(msg)-1], landlock)
		f.Add(append(msg, 0), landlock)
		bare, err := packGateWith(&Spec{Args: []string{"x"}}, fd)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bare, landlock)
		adj := -500
		oci, err := packGateWith(&Spec{Args: []string{"x"}, OCIProc: &OCIProc{Groups: []uint32{1, 2}, Umask: 0o77, OOMScoreAdj: &adj,
			Rlimits: []Rlimit{{Resource: 7, Soft: 1, Hard: 2}}, Sysctl: []string{"net.a=1", "kernel.domainname=x=y"}}}, fd)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(oci, landlock)
	}
	f.Add([]byte{}, false)
	f.Add(make([]byte, 512), false)
	f.Fuzz(func(t *testing.T, msg []byte, landlock bool) {
		fd := -1
		if landlock {
			fd = 9
		}
		v, err := unpackGate(msg, fd)
		if err != nil {
			if !errors.Is(err, syscall.EBADMSG) {
				t.Fatalf("refused with %v, want EBADMSG", err)
			}
			return
		}
		again, err := repackGate(msg, fd)
		if err != nil {
			t.Fatalf("an accepted config does not pack again: %v", err)
		}
		v2, err := unpackGate(again, fd)
		if err != nil {
			t.Fatalf("a config packed again is refused: %v", err)
		}
		if !reflect.DeepEqual(v, v2) {
			t.Fatalf("packed again, the config changed:\n%+v\n%+v", v, v2)
		}
	})
}

// FuzzGateRoundTrip: a config the init packs (buildGate, ward_pack_gate)
// is what the early child unpacks, field by field. args and env are
// NUL-separated lists (a C string holds no NUL).
func FuzzGateRoundTrip(f *testing.F) {
	s := gateSpec()
	f.Add(s.Dir, s.Args[0], strings.Join(s.Args[1:], "\x00"), strings.Join(s.Env, "\x00"), []byte(s.Seccomp[0]), s.UID, s.NoFile, true)
	f.Add("", "", "", "", []byte{}, 0, uint64(0), false)
	f.Add("/", "a/b", "\x00\x00", "PATH=", make([]byte, 7), -1, ^uint64(0), false)
	f.Fuzz(func(t *testing.T, dir, file, args, env string, filter []byte, uid int, nofile uint64, landlock bool) {
		if strings.ContainsRune(dir+file, 0) {
			return
		}
		spec := &Spec{Args: append([]string{file}, strings.Split(args, "\x00")...), Dir: dir, UID: uid, GID: uid + 1, NoFile: nofile}
		if env != "" {
			spec.Env = strings.Split(env, "\x00")
		}
		if len(filter) > 0 {
			spec.Seccomp = []seccomp.Program{filter}
		}
		fd, got := -1, -1 // the ruleset's number in the sender, and in the child
		if landlock {
			fd, got = 3, 13
		}
		msg, err := packGateWith(spec, fd)
		if bad := len(filter) > 0 && (len(filter)%8 != 0 || len(filter)/8 > 0xffff); bad != (err != nil) {
			t.Fatalf("filter of %d bytes: packed with %v", len(filter), err)
		}
		if err != nil {
			return
		}
		v, err := unpackGate(msg, got)
		if err != nil {
			t.Fatalf("a packed config is refused: %v", err)
		}
		want := &gateView{
			Stdio: [3]int{-1, -1, -1}, Setpgid: true, UID: int(int32(uid)), GID: int(int32(uid + 1)),
			LandlockFD: got, WaitFD: -1, ReportFD: -1, NoFile: nofile,
			Dir: dir, File: file, Path: envPath(spec.Env), Args: spec.Args, Env: spec.Env,
		}
		if len(filter) > 0 {
			want.Filters = [][]byte{filter}
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", v, want)
		}
	})
}

// initSpec is a spec with something in every field the init's own part
// takes.
func initSpec() *Spec {
	s := gateSpec()
	s.Hostname, s.LoopbackUp, s.TimeLimitUs, s.ProxyFD = "sandbox", true, 1500000, 9
	s.DirectPorts, s.DirectNames = []int{80, 443}, []string{"web.test", "db.test"}
	return s
}

// FuzzInitParse: whatever bytes the init reads as its config
// (initwire_linux.c's ward_init_parse, which ctest/init_test.c also runs
// under ASan and UBSan), it refuses them with EBADMSG or reads a config
// whose parts agree with each other.
func FuzzInitParse(f *testing.F) {
	for _, relay := range []int{-1, 10} {
		msg, err := packInit(initSpec(), relay)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(msg)
		f.Add(msg[:len(msg)-1])
		f.Add(append(msg, make([]byte, 8)...))
	}
	s := initSpec()
	s.Session, s.ExecFD, s.TimeLimitUs = true, 7, 0
	msg, err := packInit(s, -1)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(msg)
	if msg, err = packInit(ociSpec(), -1); err != nil {
		f.Fatal(err)
	}
	f.Add(msg)
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, msg []byte) {
		v, err := parseInit(msg)
		if err != nil {
			if !errors.Is(err, syscall.EBADMSG) {
				t.Fatalf("refused with %v, want EBADMSG", err)
			}
			return
		}
		session := v.Flags&2 != 0
		switch {
		case len(v.Hostname) > 64 || strings.ContainsRune(v.Hostname, 0):
			t.Fatalf("hostname %q", v.Hostname)
		case (v.Gate == nil) != session || (v.ExecFD >= 0) != session:
			t.Fatalf("session %v with gate %v, exec fd %d", session, v.Gate != nil, v.ExecFD)
		case (v.RelayExe >= 0) != (len(v.RelayArgs) > 0) || (v.Relay >= 0) != (v.RelayExe >= 0):
			t.Fatalf("relay fds %d, %d with %d arguments", v.RelayExe, v.Relay, len(v.RelayArgs))
		case v.NCgroup < 0 || v.NCgroup > 16 || v.TimeLimitUs < 0:
			t.Fatalf("ncgroup %d, time limit %d", v.NCgroup, v.TimeLimitUs)
		case (len(v.Hooks[0])+len(v.Hooks[1]) > 0 || v.Flags&32 != 0) && v.Flags&16 == 0:
			t.Fatalf("hooks (%d, %d, flags %#x) without OCI", len(v.Hooks[0]), len(v.Hooks[1]), v.Flags)
		}
		for _, hs := range v.Hooks {
			for _, h := range hs {
				if !strings.HasPrefix(h.Path, "/") || len(h.Args) == 0 || h.Timeout > 86400 {
					t.Fatalf("hook %+v", h)
				}
			}
		}
	})
}

// ociSpec is an OCI container's spec with hooks of both kinds the init
// runs.
func ociSpec() *Spec {
	s := gateSpec()
	s.OCI, s.StartFD, s.ReportFD, s.ExitFD, s.RuntimeHooks = true, 11, 12, 13, true
	s.HookState = []byte(`{"ociVersion":"1.3.0","id":"c","status":"created","pid":1,"bundle":"/b"}`)
	s.CreateHooks = []Hook{{Path: "/bin/sh", Args: []string{"sh", "-c", "true"}, Env: []string{"A=1", "B="}, Timeout: 5},
		{Path: "/usr/bin/hook"}}
	s.StartHooks = []Hook{{Path: "/bin/true", Args: []string{"true", ""}}}
	return s
}

// TestInitHooksRoundTrip: the hooks the parent packs are the hooks the
// init reads, in order, argv[0] the path when no args are given; bad
// hooks are refused on the Go side.
func TestInitHooksRoundTrip(t *testing.T) {
	s := ociSpec()
	msg, err := packInit(s, -1)
	if err != nil {
		t.Fatal(err)
	}
	v, err := parseInit(msg)
	if err != nil {
		t.Fatal(err)
	}
	want := [2][]Hook{{s.CreateHooks[0], {Path: "/usr/bin/hook", Args: []string{"/usr/bin/hook"}}}, s.StartHooks}
	if v.Flags&(16|32) != 16|32 || v.HookState != string(s.HookState) || !reflect.DeepEqual(v.Hooks, want) {
		t.Errorf("read back: flags %#x state %q hooks %+v\nwant %+v", v.Flags, v.HookState, v.Hooks, want)
	}
	for _, bad := range []Hook{{Path: "bin/sh"}, {Path: "/x", Timeout: 86401}, {Path: "/x", Args: []string{"a\x00b"}}} {
		s := ociSpec()
		s.StartHooks = []Hook{bad}
		if _, err := packInit(s, -1); err == nil {
			t.Errorf("hook %+v packed", bad)
		}
	}
}

// FuzzInitRoundTrip: a config the parent packs (packInit) is what the
// init reads, field by field.
func FuzzInitRoundTrip(f *testing.F) {
	s := initSpec()
	f.Add(s.Hostname, s.Args[0], strings.Join(s.DirectNames, "\x00"), int64(s.TimeLimitUs), 8, true, false)
	f.Add("", "x", "", int64(0), 0, false, true)
	f.Add("h\x00", "", "\x00", int64(-1), 17, true, false)
	f.Add("h", "x", "", int64(math.MaxInt64), 1, false, false)
	f.Fuzz(func(t *testing.T, hostname, arg0, names string, limit int64, ncg int, relay, session bool) {
		spec := &Spec{Args: []string{arg0}, Hostname: hostname, TimeLimitUs: limit, CgroupFDs: ncg, LoopbackUp: relay, TTY: session}
		if session {
			spec.Session, spec.ExecFD = true, 7
		}
		exe := -1
		if relay {
			spec.ProxyFD, exe = 9, 10
			if names != "" {
				spec.DirectNames = strings.Split(names, "\x00")
			}
		}
		msg, err := packInit(spec, exe)
		if bad := len(hostname) > 64 || strings.ContainsRune(hostname, 0) || ncg < 0 || ncg > 16; bad {
			if err == nil {
				if _, perr := parseInit(msg); perr == nil {
					t.Fatalf("a bad spec (hostname %q, names %q, %d cgroups) was packed and read", hostname, names, ncg)
				}
			}
			return
		}
		if err != nil {
			t.Fatalf("packInit: %v", err)
		}
		v, err := parseInit(msg)
		if err != nil {
			if limit < 0 || limit > math.MaxInt64/1000 {
				return // refused: a negative limit, or one past Go's longest Duration, is no limit the init takes
			}
			t.Fatalf("a packed config is refused: %v", err)
		}
		want := &initView{Flags: map[bool]uint32{true: 1}[relay] | map[bool]uint32{true: 2 | 4}[session], TimeLimitUs: limit,
			NCgroup: ncg, ExecFD: -1, RelayExe: -1, Relay: -1, Hostname: hostname}
		if session {
			want.ExecFD, want.TimeLimitUs = 7, 0
		}
		if relay {
			want.RelayExe, want.Relay, want.RelayArgs = 10, 9, relayArgs(spec)
		}
		if v.Gate != nil {
			v.Gate = nil // FuzzGateRoundTrip's
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", v, want)
		}
	})
}

// FuzzExecParse: whatever bytes come as an exec request, the init
// refuses them with EBADMSG or reads a kill or a command's gate.
func FuzzExecParse(f *testing.F) {
	gate, err := packGate(gateSpec())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(execRequest(3, 0, gate))
	f.Add(execRequest(3, 9, nil))
	f.Add(execRequest(3, 0, gate[:len(gate)-1]))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, msg []byte) {
		v, err := parseExec(msg)
		if err != nil {
			if !errors.Is(err, syscall.EBADMSG) {
				t.Fatalf("refused with %v, want EBADMSG", err)
			}
			return
		}
		if (v.Kill == 0) != (v.Gate != nil) || v.Kill < 0 || v.Kill > 64 || (v.Gate != nil && len(v.Gate.Args) == 0) {
			t.Fatalf("accepted %+v", v)
		}
	})
}
