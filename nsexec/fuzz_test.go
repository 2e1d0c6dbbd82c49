package nsexec

import (
	"bytes"
	"encoding/json"
	"testing"
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
