package ward

import (
	"encoding/json"
	"fmt"
)

// Layer is one source of settings: the built-in default, a config file's
// [sandbox], a profile, the command line's flags. It holds only the
// settings its source sets; Apply sets those on a Config and leaves the
// others as the layers below set them. Layers apply in order: built-in
// default < the file's [sandbox] < the profile < flags.
type Layer struct {
	// Source says where the values came from, for --explain:
	// "ward.toml [sandbox]", "built-in profile strict"; SourceFlags for
	// the command line.
	Source string
	vals   Config // the values of the settings set
	set    []bool // which are set, by index in settings()
}

// SourceFlags is the Source of the command line's layer: --explain then
// names each setting's flag.
const SourceFlags = "flag"

func (l *Layer) mark(i int) {
	if l.set == nil {
		l.set = make([]bool, len(settings()))
	}
	l.set[i] = true
}

func (l *Layer) has(i int) bool { return i < len(l.set) && l.set[i] }

// Apply sets what the layer sets on c and notes, in explain (if not nil),
// where each setting came from, by the setting's name.
func (l Layer) Apply(c *Config, explain map[string]string) {
	for i, s := range settings() {
		if !l.has(i) {
			continue
		}
		s.copyTo(c, &l.vals)
		if explain != nil {
			explain[s.nameOf()] = l.sourceOf(s)
		}
	}
}

func (l *Layer) sourceOf(s *setting) string {
	if l.Source != SourceFlags {
		return l.Source
	}
	if s.flag == "" {
		return "flag --" + s.via
	}
	return "flag --" + s.flag
}

// SetFlag sets the setting whose flag is flag from value as a command line
// writes it (a list setting adds to what this layer has). An invalid value
// is a *ConfigError naming --flag=value.
func (l *Layer) SetFlag(flag, value string) error {
	for i, s := range settings() {
		if s.flag != flag {
			continue
		}
		if reason := s.parseFlag(&l.vals, value, l.has(i)); reason != "" {
			return &ConfigError{Key: flag, Value: value, Reason: reason}
		}
		l.mark(i)
		for j, t := range settings() {
			if t.via == flag {
				l.mark(j) // set along with it
			}
		}
		return nil
	}
	return &ConfigError{Key: flag, Value: value, Reason: "no such setting"}
}

// LayerOf is a layer that sets the named settings (every one when none is
// named) to c's values. It panics on a name no setting has.
func LayerOf(source string, c Config, names ...string) Layer {
	l := Layer{Source: source}
	if len(names) == 0 {
		for i, s := range settings() {
			s.copyTo(&l.vals, &c)
			l.mark(i)
		}
		return l
	}
	for _, n := range names {
		s, i := settingNamed(n)
		if s == nil {
			panic("ward: LayerOf: no setting " + n)
		}
		s.copyTo(&l.vals, &c)
		l.mark(i)
	}
	return l
}

// DefaultLayer is the built-in default: the settings whose default is not
// their zero value (processes 256, workdir /home/sandbox, ...), as --help
// shows them. A Config without it gets the same values from Run and Start.
func DefaultLayer() Layer {
	l := Layer{Source: "built-in default"}
	for i, s := range settings() {
		if s.def == "" {
			continue
		}
		if reason := s.parseFlag(&l.vals, s.def, false); reason != "" {
			panic("ward: the default of " + s.nameOf() + ": " + reason)
		}
		l.mark(i)
	}
	return l
}

// layerJSON is a Layer on the wire: each setting set, by name, with its
// value in its Go type's JSON.
type layerJSON struct {
	Source   string                     `json:"source,omitempty"`
	Settings map[string]json.RawMessage `json:"settings"`
}

// MarshalJSON writes the settings the layer sets.
func (l Layer) MarshalJSON() ([]byte, error) {
	w := layerJSON{Source: l.Source, Settings: map[string]json.RawMessage{}}
	for i, s := range settings() {
		if !l.has(i) {
			continue
		}
		b, err := s.marshal(&l.vals)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.nameOf(), err)
		}
		w.Settings[s.nameOf()] = b
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes; an unknown setting or a
// value of the wrong type is an error.
func (l *Layer) UnmarshalJSON(b []byte) error {
	var w layerJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*l = Layer{Source: w.Source}
	for name, raw := range w.Settings {
		s, i := settingNamed(name)
		if s == nil {
			return fmt.Errorf("unknown setting %q", name)
		}
		if err := s.unmarshal(&l.vals, raw); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		l.mark(i)
	}
	return nil
}
