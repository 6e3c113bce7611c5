package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fleetd.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfig(t *testing.T) {
	t.Setenv("FLEETD_TEST_RPC", "http://127.0.0.1:8545")
	p := writeConfig(t, `
# comment with ${UNSET_IN_COMMENT} is fine
data_dir: state
chain:
  rpc: ${FLEETD_TEST_RPC}
  chain_id: 1337
  feedback_log: "0x00000000000000000000000000000000000000aa"
  fleet_key_file: keys/fleet.key
  trusted_senders: ["0x00000000000000000000000000000000000000bb"]
`)
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Chain.RPC != "http://127.0.0.1:8545" || cfg.Chain.ChainID != 1337 {
		t.Errorf("chain = %+v", cfg.Chain)
	}
	if got, want := cfg.resolve(cfg.Chain.FleetKeyFile), filepath.Join(filepath.Dir(p), "keys/fleet.key"); got != want {
		t.Errorf("relative key file resolved to %s, want %s (next to the config)", got, want)
	}
	empty, err := LoadConfig("")
	if err != nil || empty.Chain.RPC != "" {
		t.Errorf("no config: %+v %v", empty, err)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"unknown top key", "data_dir: x\nchian:\n  rpc: http://x\n", []string{"line 2", `unknown key "chian"`, "the top level"}},
		{"unknown nested key", "chain:\n  rpc: http://x\n  rcp: http://y\n", []string{"line 3", `unknown key "rcp" in chain`}},
		{"unset env", "chain:\n  rpc: ${FLEETD_SURELY_UNSET_VAR}\n", []string{"line 2", "FLEETD_SURELY_UNSET_VAR is not set"}},
		{"bad address", "chain:\n  feedback_log: 0x1234\n", []string{"chain.feedback_log"}},
		{"bad trusted", "chain:\n  trusted_senders: [\"0xaa\", \"nope\"]\n", []string{"chain.trusted_senders[0]", "chain.trusted_senders[1]"}},
		{"bad rpc", "chain:\n  rpc: 127.0.0.1:8545\n", []string{"chain.rpc"}},
		{"wrong type", "chain:\n  chain_id: many\n", []string{"line 2"}},
		{"bad deny", "chain:\n  deny_functions: [\"two words\"]\n", []string{"chain.deny_functions[0]"}},
		{"bad yaml", "chain: [\n", []string{"line"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeConfig(t, tc.body)
			_, err := LoadConfig(p)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range append(tc.want, p) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("missing config accepted")
	}
}

// FuzzDecodeConfig: the config parser never panics on any input.
func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte("chain:\n  rpc: http://x\n"))
	f.Add([]byte("data_dir: ${HOME}\n"))
	f.Add([]byte("chain: [1, 2]\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Add([]byte("chain:\n  trusted_senders: {a: b}\n"))
	f.Add([]byte("report:\n  window: 1m\nposter:\n  window: 2m\n"))
	f.Add([]byte("report: 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var cfg Config
		if err := decodeStrict(b, &cfg); err == nil {
			cfg.validate()
		}
	})
}

// TestExampleConfigDocumentsEveryKey keeps configs/fleetd.example.yaml true:
// it must load, and it must mention every key the Config type declares.
func TestExampleConfigDocumentsEveryKey(t *testing.T) {
	const example = "../../configs/fleetd.example.yaml"
	t.Setenv("GEMINI_API_KEY", "test-gemini-key")
	t.Setenv("OPENAI_API_KEY", "test-openai-key")
	cfg, err := LoadConfig(example)
	if err != nil {
		t.Fatal(err)
	}
	if d := cfg.Deprecated(); len(d) > 0 {
		t.Errorf("%s uses renamed keys: %q", example, d)
	}
	b, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		if n.Kind == yaml.DocumentNode {
			walk(n.Content[0], prefix)
			return
		}
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := join(prefix, n.Content[i].Value)
			present[k] = true
			walk(n.Content[i+1], k)
		}
	}
	walk(&doc, "")
	for _, k := range configKeys(reflect.TypeOf(Config{}), "") {
		if !present[k] {
			t.Errorf("%s does not document %s", example, k)
		}
	}
}

// TestRenamedConfigKey: a key renamed for the glossary (report: is now
// poster:) is still read, as the new key, with a warning that names the
// new key and the line, on load, in config validate and in fleetd doctor;
// setting both names is an error naming both lines.
func TestRenamedConfigKey(t *testing.T) {
	old := writeConfig(t, "data_dir: state\nreport:\n  per_source: 7\n  window: 3m\n  dedupe_window: 2h\n")
	cfg, err := LoadConfig(old)
	if err != nil {
		t.Fatal(err)
	}
	if want := (PosterConfig{PerSource: 7, Window: 3 * time.Minute, DedupeWindow: 2 * time.Hour}); cfg.Poster != want {
		t.Errorf("report: read as %+v, want %+v", cfg.Poster, want)
	}
	if d := cfg.Deprecated(); len(d) != 1 || !strings.Contains(d[0], "line 2") || !strings.Contains(d[0], "poster") {
		t.Errorf("warnings %q, want one naming line 2 and poster", d)
	}

	cur, err := LoadConfig(writeConfig(t, "poster:\n  per_source: 7\n"))
	if err != nil || cur.Poster.PerSource != 7 || len(cur.Deprecated()) != 0 {
		t.Errorf("poster: read as %+v, warnings %q, err %v", cur.Poster, cur.Deprecated(), err)
	}

	_, err = LoadConfig(writeConfig(t, "poster:\n  window: 1m\nreport:\n  window: 2m\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3: report is the old name of poster, which line 1 sets too") {
		t.Errorf("both names: %v", err)
	}
	_, err = LoadConfig(writeConfig(t, "report:\n  per_sourc: 1\n"))
	if err == nil || !strings.Contains(err.Error(), `unknown key "per_sourc" in poster`) {
		t.Errorf("an unknown key under the old name: %v", err)
	}

	_, stderr, code := run(t, "", "config", "validate", "--config", old)
	if code != 0 || !strings.Contains(stderr, "warning: config "+old+": line 2: report is deprecated, read as poster") {
		t.Errorf("config validate: exit %d, stderr %q", code, stderr)
	}
	out, _, _ := run(t, "", "doctor", "--config", old, "--data-dir", filepath.Join(t.TempDir(), "data"))
	var warned bool
	for _, l := range strings.Split(out, "\n") {
		warned = warned || strings.HasPrefix(l, "! config") && strings.Contains(l, "report is deprecated, read as poster")
	}
	if !warned {
		t.Errorf("doctor does not warn about report:\n%s", out)
	}
}

// configKeys lists the dotted YAML keys of a config struct type.
func configKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if strings.Contains(opts, "inline") {
			keys = append(keys, configKeys(f.Type, prefix)...)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		k := join(prefix, name)
		keys = append(keys, k)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			keys = append(keys, configKeys(ft, k)...)
		}
	}
	return keys
}

// TestConfigTargetABIs: target.abis files are read at load, relative to
// the config, and an unreadable or invalid one is an error naming the
// entry and the file; URLs are left to the run.
func TestConfigTargetABIs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "reg.json"), []byte(`[{"type":"function","name":"setFee","inputs":[{"type":"uint256"}]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.json"), []byte(`{"not":"an abi"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	target := func(abis string) string {
		return "target:\n  registry: \"0x00000000000000000000000000000000000000aa\"\n  faces: http://127.0.0.1:1/{name}\n  call: http://127.0.0.1:1/call\n  fetch_allow: [\"127.0.0.1:1\"]\n  abis: " + abis + "\n"
	}
	write := func(body string) string {
		p := filepath.Join(dir, "fleetd.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg, err := LoadConfig(write(target(`["reg.json", "http://127.0.0.1:1/abi.json"]`)))
	if err != nil {
		t.Fatal(err)
	}
	tg, err := cfg.target()
	if err != nil || tg.ABIs[0] != filepath.Join(dir, "reg.json") || tg.ABIs[1] != "http://127.0.0.1:1/abi.json" {
		t.Errorf("target.abis resolved to %q (%v)", tg.ABIs, err)
	}
	for _, tc := range []struct{ abis, want string }{
		{`["missing.json"]`, "target.abis[0]: read abi " + filepath.Join(dir, "missing.json")},
		{`["reg.json", "junk.json"]`, "target.abis[1]: abi " + filepath.Join(dir, "junk.json") + " is not a JSON contract ABI"},
		{`[""]`, "target.abis[0]: empty"},
		{`["ftp://127.0.0.1:1/abi.json"]`, "target.abis[0]"},
	} {
		_, err := LoadConfig(write(target(tc.abis)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("abis %s: %v, want an error with %q", tc.abis, err, tc.want)
		}
	}
}
