package nsexec

import (
	"bytes"
	"encoding/json"
	"errors"
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
		`{"type":"config","spec":{"args":["sh","-c","true"],"env":["A=1"],"dir":"/","lo":true,"uid":1000,"gid":1000,"nofile":64,"cgroup_fds":1,"tty":false,"direct_ports":[80,443],"direct_names":["web.test"],"proxy_fd":5}}`,
		`{"type":"error","step":"mount-root","path":"/x","errno":13,"msg":"permission denied"}`,
		`{"type":"ready","steps":[{"step":"a","us":12,"side":"init"}],"start_us":1,"config_us":2}`,
		`{"type":"exit","exit":{"code":0,"signal":0,"user_us":1,"sys_us":2,"maxrss_kb":3,"reaped":1,"denied":[{"syscall":"mount","errno":"EPERM","count":2}]}}`,
		`{"type":"started","pid":2,"id":7}`,
		`{"type":"config","spec":{"seccomp":[{"bpf":"AAAA"}]}}`,
		`{"type":1}`, `[]`, `null`, `{"spec":{"plan":null}}`,
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

// FuzzExecRequestDecode: the same for a long-lived sandbox's exec request.
func FuzzExecRequestDecode(f *testing.F) {
	f.Add([]byte(`{"id":3,"args":["ls","-l"],"env":["A=1"],"dir":"/tmp"}`))
	f.Add([]byte(`{"id":3,"kill":9}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r ExecRequest
		if json.Unmarshal(data, &r) != nil {
			return
		}
		once, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		var r2 ExecRequest
		if err := json.Unmarshal(once, &r2); err != nil {
			t.Fatal(err)
		}
		if twice, _ := json.Marshal(&r2); !bytes.Equal(once, twice) {
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
