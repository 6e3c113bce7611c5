package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists"
	"go.yaml.in/yaml/v3"
)

// Config is the whole fleetd configuration file. Every key is documented in
// configs/fleetd.example.yaml; decoding is strict (unknown keys are errors naming
// the line) and ${ENV} references in values are expanded before decoding.
type Config struct {
	DataDir string        `yaml:"data_dir"`
	Chain   ChainConfig   `yaml:"chain"`
	Target  *fleet.Target `yaml:"target"`
	Budget  fleet.Budget  `yaml:"budget"` // per run; personas override
	Tools   ToolsConfig   `yaml:"tools"`
	Crawl   CrawlConfig   `yaml:"crawl"`  // the crawl engine (crawl.go)
	Poster  PosterConfig  `yaml:"poster"` // was report: (renamedKeys)
	// PersonasDir holds the specialists (*.yaml); empty: the built-in set.
	PersonasDir string       `yaml:"personas_dir"`
	Models      ModelsConfig `yaml:"models"`
	Daemon      DaemonConfig `yaml:"daemon"`
	Triage      TriageConfig `yaml:"triage"`
	Forge       ForgeConfig  `yaml:"forge"` // the fix stage's forge (cmd_fix_config.go)
	Fixer       FixerConfig  `yaml:"fixer"`

	// path is where the config was read from; relative key files resolve against its directory.
	path string
	// deprecated holds a warning for every renamed key the file still
	// uses (renamedKeys): printed on load and listed by fleetd doctor.
	deprecated []string
}

// ChainConfig holds the connection settings shared by every command that talks
// to the chain. Command-line flags win over these values.
type ChainConfig struct {
	RPC          string `yaml:"rpc"`
	ChainID      uint64 `yaml:"chain_id"`
	FeedbackLog  string `yaml:"feedback_log"`
	FleetKeyFile string `yaml:"fleet_key_file"`
	// FleetName is a name on target.registry the fleet identity owns (or
	// the daemon claims): its metadata says which specialist set runs and
	// where its kind=persona record is (fleetname.go). Empty: none.
	FleetName       string   `yaml:"fleet_name"`
	SponsorKeyFile  string   `yaml:"sponsor_key_file"`
	TrustedSenders  []string `yaml:"trusted_senders"`
	MaxGasPriceGwei float64  `yaml:"max_gas_price_gwei"`
	DenyFunctions   []string `yaml:"deny_functions"`
	TimeoutSeconds  float64  `yaml:"timeout_seconds"`
}

// ToolsConfig bounds the qa_* tools.
type ToolsConfig struct {
	CompileTimeout time.Duration `yaml:"compile_timeout"`
	CallTimeout    time.Duration `yaml:"call_timeout"`
	FetchTimeout   time.Duration `yaml:"fetch_timeout"`
	MaxBodyBytes   int           `yaml:"max_body_bytes"`
	FundWei        uint64        `yaml:"fund_wei"`
	RequestRate    float64       `yaml:"request_rate"`  // per host; negative: unpaced
	RequestBurst   int           `yaml:"request_burst"` // 0: the rate
	FuzzWorkers    int           `yaml:"fuzz_workers"`  // 0: qatools.DefaultFuzzWorkers
	// HarnessPlanner is the model (gemini or openai, under models:) that
	// writes or repairs fuzz harnesses for a target.repo without a fuzz
	// target; empty: the generator alone.
	HarnessPlanner string `yaml:"harness_planner"`
}

// PosterConfig tunes the poster's flood protection: how many findings one
// source may post per window, and how long the same fingerprint is not
// posted again. (The key was report: until issue 34; it is still read.)
type PosterConfig struct {
	PerSource    int           `yaml:"per_source"`
	Window       time.Duration `yaml:"window"`
	DedupeWindow time.Duration `yaml:"dedupe_window"`
}

// DefaultBudget is a run's budget when the config sets none.
var DefaultBudget = fleet.Budget{MaxTurns: 60, MaxWrites: 20, MaxTokens: 200_000, MaxWei: 50_000_000_000_000_000, Deadline: 5 * time.Minute}

// DefaultDataDir is used when neither --data-dir nor data_dir is set.
const DefaultDataDir = ".fleetd"

// LoadConfig reads and validates the config file at path. An empty path yields
// the defaults. Errors name the file, and the line or field at fault.
func LoadConfig(path string) (*Config, error) {
	cfg := &Config{}
	if path != "" {
		// Absolute, so every path resolved against it (and every path
		// fleetd prints, errors included) works from any directory.
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		cfg.path = path
		// Every error in the file, not the first: what decoded is
		// validated too, so one look lists all there is to fix.
		derr := decodeStrict(b, cfg)
		if verr := cfg.validate(); derr != nil || verr != nil {
			return nil, fmt.Errorf("config %s: %w", path, errors.Join(derr, verr))
		}
		return cfg, nil
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// configErrors splits a config error into the errors it joins (LoadConfig
// lists them all), each still naming its line or field.
func configErrors(err error) []error {
	if m, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range m.Unwrap() {
			out = append(out, configErrors(e)...)
		}
		return out
	}
	if inner := errors.Unwrap(err); inner != nil {
		if errs := configErrors(inner); len(errs) > 1 {
			return errs
		}
	}
	return []error{err}
}

// budget is the per-run budget: the defaults with the config's values on top.
func (c *Config) budget() fleet.Budget { return DefaultBudget.Merge(c.Budget) }

// target returns the target section or an error saying it is needed.
func (c *Config) target() (fleet.Target, error) {
	if c.Target == nil {
		return fleet.Target{}, errors.New("no target: section in the config (see configs/fleetd.example.yaml)")
	}
	t := *c.Target
	if t.Corpus != "" {
		t.Corpus = c.resolve(t.Corpus)
	}
	if len(t.ABIs) > 0 {
		t.ABIs = slices.Clone(t.ABIs)
		for i, a := range t.ABIs {
			if !fleet.IsURL(a) {
				t.ABIs[i] = c.resolve(a)
			}
		}
	}
	// A compiler named by a relative path (./bin/tlc) means "next to the
	// config", like every other path in it; a bare name is looked up in PATH.
	if len(t.Compiler) > 0 && strings.ContainsRune(t.Compiler[0], filepath.Separator) {
		t.Compiler = append([]string{c.resolve(t.Compiler[0])}, t.Compiler[1:]...)
	}
	if t.Repo != nil {
		r := *t.Repo
		if isLocalRepo(r.URL) {
			r.URL = c.resolve(strings.TrimPrefix(r.URL, "file://"))
		}
		t.Repo = &r
	}
	return t, nil
}

// isLocalRepo reports whether a target.repo url names a local directory
// rather than a remote git URL.
func isLocalRepo(u string) bool {
	if strings.HasPrefix(u, "file://") {
		return true
	}
	if strings.Contains(u, "://") {
		return false
	}
	// scp-like git@host:path
	if i := strings.Index(u, ":"); i > 0 && !strings.Contains(u[:i], "/") {
		return false
	}
	return true
}

// resolve returns p relative to the config file's directory when p is relative
// and the config came from a file; key file paths in a config mean "next to me".
func (c *Config) resolve(p string) string {
	if p == "" || filepath.IsAbs(p) || c.path == "" {
		return p
	}
	return filepath.Join(filepath.Dir(c.path), p)
}

func (c *Config) validate() error {
	var errs []error
	ch := c.Chain
	if ch.RPC != "" && !strings.HasPrefix(ch.RPC, "http://") && !strings.HasPrefix(ch.RPC, "https://") && !strings.HasPrefix(ch.RPC, "ws://") && !strings.HasPrefix(ch.RPC, "wss://") {
		errs = append(errs, fmt.Errorf("chain.rpc: %q is not an http(s) or ws(s) URL", ch.RPC))
	}
	if ch.FeedbackLog != "" {
		if _, err := fleet.ParseAddress(ch.FeedbackLog); err != nil {
			errs = append(errs, fmt.Errorf("chain.feedback_log: %w", err))
		}
	}
	if ch.FleetName != "" {
		if err := validFleetName(ch.FleetName); err != nil {
			errs = append(errs, fmt.Errorf("chain.fleet_name: %w", err))
		}
	}
	for i, s := range ch.TrustedSenders {
		if _, err := fleet.ParseAddress(s); err != nil {
			errs = append(errs, fmt.Errorf("chain.trusted_senders[%d]: %w", i, err))
		}
	}
	if ch.MaxGasPriceGwei < 0 {
		errs = append(errs, fmt.Errorf("chain.max_gas_price_gwei: must not be negative, got %v", ch.MaxGasPriceGwei))
	}
	if ch.TimeoutSeconds < 0 {
		errs = append(errs, fmt.Errorf("chain.timeout_seconds: must not be negative, got %v", ch.TimeoutSeconds))
	}
	for i, f := range ch.DenyFunctions {
		if !validDenyPattern(f) {
			errs = append(errs, fmt.Errorf("chain.deny_functions[%d]: %q is neither a signature like adminBurn(string[]) nor a name pattern like upgrade*", i, f))
		}
	}
	if c.Target != nil {
		if err := c.Target.Validate("target"); err != nil {
			errs = append(errs, err)
		}
		for i, a := range c.Target.ABIs {
			if strings.TrimSpace(a) == "" || fleet.IsURL(a) {
				continue // Validate judged it; a URL is fetched by the run
			}
			if _, err := specialists.LoadABIFile(c.resolve(a)); err != nil {
				errs = append(errs, fmt.Errorf("target.abis[%d]: %w", i, err))
			}
		}
	}
	if err := c.Budget.Validate("budget"); err != nil {
		errs = append(errs, err)
	}
	if c.Tools.CompileTimeout < 0 || c.Tools.CallTimeout < 0 || c.Tools.FetchTimeout < 0 || c.Tools.MaxBodyBytes < 0 {
		errs = append(errs, errors.New("tools: timeouts and max_body_bytes must not be negative"))
	}
	if p := c.Tools.HarnessPlanner; p != "" && p != fleet.PlannerGemini && p != fleet.PlannerOpenAI {
		errs = append(errs, fmt.Errorf("tools.harness_planner: %q: want gemini, openai, or empty for the generator alone", p))
	}
	if c.Tools.FuzzWorkers < 0 || c.Tools.FuzzWorkers > 64 {
		errs = append(errs, fmt.Errorf("tools.fuzz_workers: must be 0 (one per CPU, at most 4) to 64, got %d", c.Tools.FuzzWorkers))
	}
	if err := c.Crawl.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Tools.RequestBurst < 0 {
		errs = append(errs, fmt.Errorf("tools.request_burst: must not be negative, got %d", c.Tools.RequestBurst))
	}
	if err := c.Daemon.Daily.budget().Validate("daemon.daily_budget"); err != nil {
		errs = append(errs, err)
	}
	if c.Daemon.MaxConcurrent < 0 || c.Daemon.ShutdownTimeout < 0 || c.Daemon.PollInterval < 0 {
		errs = append(errs, errors.New("daemon: max_concurrent, shutdown_timeout and poll_interval must not be negative"))
	}
	if err := c.Triage.Config.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("triage: %w", err))
	}
	if c.Poster.PerSource < 0 || c.Poster.Window < 0 || c.Poster.DedupeWindow < 0 {
		errs = append(errs, errors.New("poster: per_source, window and dedupe_window must not be negative"))
	}
	errs = append(errs, c.validateFixStage()...)
	return errors.Join(errs...)
}

var (
	denySignature = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*\([A-Za-z0-9_,\[\]() ]*\)$`)
	denyPattern   = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*\*?$`)
)

func validDenyPattern(s string) bool {
	return denySignature.MatchString(s) || denyPattern.MatchString(s)
}

// renamedKeys are config keys that were renamed so that one word names one
// thing (docs/architecture.md, "Glossary"). The old key is still read, as
// the new one, with a warning naming the new key, on load and in fleetd
// doctor. Paths are dotted; only the last element was renamed.
var renamedKeys = []struct{ old, new string }{
	// "report" is the health report; these are the poster's limits.
	{"report", "poster"},
}

// Deprecated returns a warning for every renamed key the file uses.
func (c *Config) Deprecated() []string { return c.deprecated }

// renameKeys rewrites, in root, every old key of renamedKeys to its new
// name and records a warning for each. A file that sets both names of one
// key gets an error naming both lines.
func (c *Config) renameKeys(root *yaml.Node) (errs []error) {
	for _, r := range renamedKeys {
		parent, oldLeaf := splitKey(r.old)
		_, newLeaf := splitKey(r.new)
		m := mappingAt(root, parent)
		if m == nil {
			continue
		}
		var oldKey, newKey *yaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			switch k := m.Content[i]; k.Value {
			case oldLeaf:
				oldKey = k
			case newLeaf:
				newKey = k
			}
		}
		switch {
		case oldKey == nil:
		case newKey != nil:
			errs = append(errs, fmt.Errorf("line %d: %s is the old name of %s, which line %d sets too: keep %s only", oldKey.Line, r.old, r.new, newKey.Line, r.new))
		default:
			oldKey.Value = newLeaf
			c.deprecated = append(c.deprecated, fmt.Sprintf("line %d: %s is deprecated, read as %s: rename it", oldKey.Line, r.old, r.new))
		}
	}
	return errs
}

// splitKey splits a dotted key into its parent path and its last element.
func splitKey(key string) (parent []string, leaf string) {
	parts := strings.Split(key, ".")
	return parts[:len(parts)-1], parts[len(parts)-1]
}

// mappingAt returns the mapping node at path below n, or nil.
func mappingAt(n *yaml.Node, path []string) *yaml.Node {
	for _, p := range path {
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == p {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	return n
}

// envRef matches ${NAME}; $NAME without braces is left alone so values such as
// passwords containing '$' survive.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// decodeStrict decodes YAML into out, expanding ${ENV} in scalar values and
// refusing keys out does not declare. Errors carry the YAML line; all of
// them are returned (joined), and out holds what did decode.
func decodeStrict(b []byte, out any) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return err
	}
	if doc.Kind == 0 {
		return nil // empty file
	}
	errs := expandEnv(&doc, nil)
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if c, ok := out.(*Config); ok {
		errs = append(errs, c.renameKeys(root)...)
	}
	errs = append(errs, checkKeys(root, reflect.TypeOf(out).Elem(), "")...)
	if err := root.Decode(out); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return errors.Join(append(errs, err)...)
		}
		for _, m := range te.Errors { // "line 3: cannot unmarshal ...", one per value
			errs = append(errs, errors.New(m))
		}
	}
	return errors.Join(errs...)
}

// expandEnv replaces ${NAME} in n's scalars and appends to errs a line's
// variables that are not set.
func expandEnv(n *yaml.Node, errs []error) []error {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		var missing []string
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(m string) string {
			name := envRef.FindStringSubmatch(m)[1]
			v, ok := os.LookupEnv(name)
			if !ok {
				missing = append(missing, name)
			}
			return v
		})
		if len(missing) > 0 {
			errs = append(errs, fmt.Errorf("line %d: environment variable %s is not set", n.Line, strings.Join(missing, ", ")))
		}
	}
	for _, c := range n.Content {
		errs = expandEnv(c, errs)
	}
	return errs
}

// checkKeys walks a mapping node alongside the struct type it decodes into and
// reports every key the type does not declare, with its line and dotted path.
func checkKeys(n *yaml.Node, t reflect.Type, prefix string) (errs []error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		fields := map[string]reflect.Type{}
		yamlFields(t, fields)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			ft, ok := fields[k.Value]
			if !ok {
				known := make([]string, 0, len(fields))
				for name := range fields {
					known = append(known, name)
				}
				slices.Sort(known)
				errs = append(errs, fmt.Errorf("line %d: unknown key %q in %s (known: %s)", k.Line, k.Value, orTop(prefix), strings.Join(known, ", ")))
				continue
			}
			errs = append(errs, checkKeys(n.Content[i+1], ft, join(prefix, k.Value))...)
		}
	case n.Kind == yaml.SequenceNode && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for i, c := range n.Content {
			errs = append(errs, checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", prefix, i))...)
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Map:
		for i := 0; i+1 < len(n.Content); i += 2 {
			errs = append(errs, checkKeys(n.Content[i+1], t.Elem(), join(prefix, n.Content[i].Value))...)
		}
	}
	return errs
}

// yamlFields collects a struct's YAML keys, descending into ,inline fields.
func yamlFields(t reflect.Type, into map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct {
			yamlFields(f.Type, into)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		into[name] = f.Type
	}
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

func orTop(prefix string) string {
	if prefix == "" {
		return "the top level"
	}
	return prefix
}
