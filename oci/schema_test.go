package oci

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// specSchema compiles one of runtime-spec's schemas (testdata/schema), its
// references to the others resolved from the same directory.
func specSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	dir, err := filepath.Abs("testdata/schema")
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	// runtime-spec's schemas are draft 4; some of them do not say so.
	c.DefaultDraft(jsonschema.Draft4)
	sch, err := c.Compile("file://" + filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return sch
}

func validate(t *testing.T, sch *jsonschema.Schema, what string, b []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: not JSON: %v", what, err)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("%s does not validate: %v\n%s", what, err, b)
	}
}

// TestFeaturesValidate: the features answer is what runtime-spec's
// features schema describes.
func TestFeaturesValidate(t *testing.T) {
	b, err := json.Marshal(Features("v1", "abc"))
	if err != nil {
		t.Fatal(err)
	}
	validate(t, specSchema(t, "features-schema.json"), "features", b)
}

// TestStateValidates: the state command's answer, running and stopped, is
// runtime-spec's state (runc's additions are allowed by its schema).
func TestStateValidates(t *testing.T) {
	sch := specSchema(t, "state-schema.json")
	s := testStore(t, true)
	cmd := child(t)
	st := stateOf(t, "c", cmd.Process.Pid)
	st.Created = time.Now()
	if err := s.Create(st); err != nil {
		t.Fatal(err)
	}
	for _, status := range []string{"running", "stopped"} {
		if status == "stopped" {
			st.InitStart++
		}
		b, err := json.Marshal(s.Output(st))
		if err != nil {
			t.Fatal(err)
		}
		validate(t, sch, "state ("+status+")", b)
	}
}

// TestTestdataConfigsValidate: the config.json files the tests read are
// valid runtime-spec, so that what ward makes of them is what a caller
// would give.
func TestTestdataConfigsValidate(t *testing.T) {
	sch := specSchema(t, "config-schema.json")
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) == 0 {
		t.Fatal("no config.json files in testdata")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		validate(t, sch, f, b)
	}
}
