package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/qafleet/fleetd/trajectory"
)

// Result is a tool's JSON result object. Every result carries "ok" and
// "latency_ms", and "error" when ok is false (DESIGN.md §5).
type Result map[string]any

// OK returns a successful result holding fields.
func OK(fields map[string]any) Result {
	r := Result{"ok": true}
	for k, v := range fields {
		r[k] = v
	}
	return r
}

// Fail returns a failed result whose error is the formatted message.
func Fail(format string, args ...any) Result {
	return Result{"ok": false, "error": fmt.Sprintf(format, args...)}
}

// ResultDegraded is the result key of a capability the tool fell back
// from: an object {"component", "fallback", "cause"} (a fuzz engine that
// could not build, what ran instead, the compiler's first error). The
// agent loop gathers them into the run's footer (trajectory.Degradation),
// where `fleetd runs show`, the console and /metrics read them.
const ResultDegraded = "degraded"

// ResultLeftOnPlatform is the result key of what a call wrote to the
// platform and could not undo: a list of sentences, each naming a method
// and URL or a field by name and why it stayed (qa_authz's). The agent
// loop gathers them (RunResult.Left) and the run's summary lists those
// it does not already say, so a call that ends the run (cancelled, the
// budget spent) still has its leftovers in the footer.
const ResultLeftOnPlatform = "left_on_platform"

// LeftOnPlatform reads the result's left_on_platform field (nil when it
// has none).
func (r Result) LeftOnPlatform() []string {
	switch v := r[ResultLeftOnPlatform].(type) {
	case []string:
		return v
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Degradation reads the result's degraded field (ok false when it has none
// or it names no component).
func (r Result) Degradation() (trajectory.Degradation, bool) {
	var d trajectory.Degradation
	switch m := r[ResultDegraded].(type) {
	case map[string]any:
		d.Component, _ = m["component"].(string)
		d.Fallback, _ = m["fallback"].(string)
		d.Cause, _ = m["cause"].(string)
	case map[string]string:
		d = trajectory.Degradation{Component: m["component"], Fallback: m["fallback"], Cause: m["cause"]}
	case trajectory.Degradation:
		d = m
	}
	return d, d.Component != ""
}

// IsOK reports the result's ok field.
func (r Result) IsOK() bool { ok, _ := r["ok"].(bool); return ok }

// Err returns the result's error message, "" if none.
func (r Result) Err() string { s, _ := r["error"].(string); return s }

// Handler runs a tool whose arguments have already been validated. It returns
// a Result for everything the model should see (tool errors are data) and an
// error only for failures that must end the run: cancellation, a broken
// sandbox, an unwritable outbox.
type Handler interface {
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, args json.RawMessage) (Result, error)

// Call calls f.
func (f HandlerFunc) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	return f(ctx, args)
}

// Tool is a tool's metadata and handler. Build one with NewTool so the schema
// comes from the typed argument struct: one source of truth for validation,
// `fleetd tools` and the model providers' function declarations.
type Tool struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Rung        Dial    `json:"rung"` // the lowest dial setting that may call it
	Schema      *Schema `json:"schema"`
	Handler     Handler `json:"-"`
	argsType    reflect.Type
}

// NewTool builds a tool whose handler receives decoded, validated args of
// type A. A must be a struct; see SchemaFor for the tags it understands.
func NewTool[A any](name, description string, rung Dial, fn func(ctx context.Context, args A) (Result, error)) Tool {
	t := reflect.TypeFor[A]()
	schema := SchemaFor(t)
	return Tool{
		Name: name, Description: description, Rung: rung, Schema: schema, argsType: t,
		Handler: HandlerFunc(func(ctx context.Context, raw json.RawMessage) (Result, error) {
			var a A
			if err := decodeArgs(raw, schema, &a); err != nil {
				return Fail("%v", err), nil
			}
			return fn(ctx, a)
		}),
	}
}

// Validate checks raw arguments against the tool's schema without calling it.
func (t Tool) Validate(raw json.RawMessage) error {
	if t.argsType == nil {
		return checkArgs(raw, t.Schema)
	}
	return decodeArgs(raw, t.Schema, reflect.New(t.argsType).Interface())
}

// Schema is the subset of JSON Schema fleetd's tools use; it is what both
// model providers accept in function declarations.
type Schema struct {
	Type        string             `json:"type"`
	Description string             `json:"description,omitempty"`
	Properties  map[string]*Schema `json:"properties,omitempty"`
	Required    []string           `json:"required,omitempty"`
	Items       *Schema            `json:"items,omitempty"`
	Enum        []string           `json:"enum,omitempty"`
	MaxLength   int                `json:"maxLength,omitempty"`
	// AdditionalProperties false: unknown arguments are errors.
	AdditionalProperties *bool `json:"additionalProperties,omitempty"`
}

// SchemaFor derives a Schema from a struct type. Field tags:
//
//	json:"name,omitempty"   the argument name; without omitempty it is required
//	desc:"..."              its description
//	enum:"a,b,c"            allowed string values
//	maxlen:"N"              maximum string length in bytes
//	jsontype:"array"        the JSON type of a json.RawMessage field (default object)
func SchemaFor(t reflect.Type) *Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	no := false
	s := &Schema{Type: "object", Properties: map[string]*Schema{}, AdditionalProperties: &no}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := typeSchema(f.Type, f.Tag.Get("jsontype"))
		p.Description = f.Tag.Get("desc")
		if e := f.Tag.Get("enum"); e != "" {
			p.Enum = strings.Split(e, ",")
		}
		if m := f.Tag.Get("maxlen"); m != "" {
			p.MaxLength, _ = strconv.Atoi(m)
		}
		s.Properties[name] = p
		if !strings.Contains(opts, "omitempty") {
			s.Required = append(s.Required, name)
		}
	}
	return s
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func typeSchema(t reflect.Type, jsontype string) *Schema {
	if t == rawMessageType {
		if jsontype == "" {
			jsontype = "object"
		}
		return &Schema{Type: jsontype}
	}
	switch t.Kind() {
	case reflect.String:
		return &Schema{Type: "string"}
	case reflect.Bool:
		return &Schema{Type: "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &Schema{Type: "integer"}
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: "number"}
	case reflect.Slice, reflect.Array:
		return &Schema{Type: "array", Items: typeSchema(t.Elem(), "")}
	case reflect.Pointer:
		return typeSchema(t.Elem(), jsontype)
	case reflect.Struct:
		return SchemaFor(t)
	}
	return &Schema{Type: "object"}
}

// ArgError is an invalid tool argument; the model receives its message.
type ArgError struct {
	Field  string
	Reason string
}

func (e *ArgError) Error() string {
	if e.Field == "" {
		return "invalid arguments: " + e.Reason
	}
	return fmt.Sprintf("invalid argument %q: %s", e.Field, e.Reason)
}

// checkArgs validates raw against s: a JSON object, no unknown keys, required
// keys present, JSON types and string limits respected.
func checkArgs(raw json.RawMessage, s *Schema) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return &ArgError{Reason: "want a JSON object of arguments: " + err.Error()}
	}
	for k := range fields {
		if _, ok := s.Properties[k]; !ok && s.AdditionalProperties != nil && !*s.AdditionalProperties {
			known := make([]string, 0, len(s.Properties))
			for n := range s.Properties {
				known = append(known, n)
			}
			sort.Strings(known)
			return &ArgError{Field: k, Reason: "unknown argument (known: " + strings.Join(known, ", ") + ")"}
		}
	}
	for _, req := range s.Required {
		if v, ok := fields[req]; !ok || string(bytes.TrimSpace(v)) == "null" {
			return &ArgError{Field: req, Reason: "required"}
		}
	}
	for name, v := range fields {
		p, ok := s.Properties[name]
		if !ok {
			continue // an additional property the schema allows
		}
		if err := checkType(bytes.TrimSpace(v), p); err != nil {
			return &ArgError{Field: name, Reason: err.Error()}
		}
	}
	return nil
}

func checkType(v []byte, p *Schema) error {
	if len(v) == 0 {
		return errors.New("empty value")
	}
	got := "object"
	switch v[0] {
	case '"':
		got = "string"
	case 't', 'f':
		got = "boolean"
	case 'n':
		got = "null"
	case '[':
		got = "array"
	case '{':
		got = "object"
	default:
		got = "number"
	}
	want := p.Type
	if want == "integer" && got == "number" {
		if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
			return fmt.Errorf("want an integer, got %s", v)
		}
		return nil
	}
	if got != want {
		return fmt.Errorf("want %s, got %s", want, got)
	}
	if got == "string" && (p.MaxLength > 0 || len(p.Enum) > 0) {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return err
		}
		if p.MaxLength > 0 && len(s) > p.MaxLength {
			return fmt.Errorf("%d bytes is longer than the maximum %d", len(s), p.MaxLength)
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, s) {
			return fmt.Errorf("%q is not one of %s", s, strings.Join(p.Enum, ", "))
		}
		if !utf8.ValidString(s) {
			return errors.New("not valid UTF-8")
		}
	}
	return nil
}

func decodeArgs(raw json.RawMessage, s *Schema, into any) error {
	if err := checkArgs(raw, s); err != nil {
		return err
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, into); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &ArgError{Field: te.Field, Reason: "want " + te.Type.String() + ", got " + te.Value}
		}
		return &ArgError{Reason: err.Error()}
	}
	return nil
}

// Registry holds the tools a run may call. It is a value built by the
// caller; nothing registers itself.
type Registry struct {
	tools map[string]Tool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]Tool{}} }

// Add registers t. It rejects an empty name, a name without the qa_ prefix,
// a duplicate, a missing handler and an invalid rung.
func (r *Registry) Add(t Tool) error {
	switch {
	case t.Name == "":
		return errors.New("add tool: empty name")
	case !strings.HasPrefix(t.Name, "qa_"):
		return fmt.Errorf("add tool %q: name must start with qa_", t.Name)
	case t.Handler == nil:
		return fmt.Errorf("add tool %q: no handler", t.Name)
	case !t.Rung.Valid():
		return fmt.Errorf("add tool %q: invalid rung", t.Name)
	}
	if _, dup := r.tools[t.Name]; dup {
		return fmt.Errorf("add tool %q: already registered", t.Name)
	}
	if t.Schema == nil {
		t.Schema = &Schema{Type: "object"} // untyped: any object of arguments
	}
	r.tools[t.Name] = t
	return nil
}

// Get returns the tool called name.
func (r *Registry) Get(name string) (Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// List returns every tool, sorted by name.
func (r *Registry) List() []Tool {
	out := make([]Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Subset returns a registry holding only the named tools, or an error naming
// the first unknown one.
func (r *Registry) Subset(names []string) (*Registry, error) {
	sub := NewRegistry()
	for _, n := range names {
		t, ok := r.tools[n]
		if !ok {
			return nil, fmt.Errorf("unknown tool %q", n)
		}
		sub.tools[n] = t
	}
	return sub, nil
}

type dialKey struct{}

func withDial(ctx context.Context, d Dial) context.Context {
	return context.WithValue(ctx, dialKey{}, d)
}

// DialOf is the dial Dispatch read for the call ctx belongs to, for a tool
// whose arguments can ask for more than its rung (qa_fetch with a session
// is an exercise action). Outside Dispatch it is Observe: fail closed.
func DialOf(ctx context.Context) Dial {
	if d, ok := ctx.Value(dialKey{}).(Dial); ok {
		return d
	}
	return Observe
}

// DialSource reports the current dial; *Control is one.
type DialSource interface {
	Dial() (Dial, error)
}

// Verdict classifies what happened to one tool call.
type Verdict string

// The verdicts a dispatch can reach.
const (
	VerdictOK      Verdict = "ok"      // the tool ran and succeeded
	VerdictError   Verdict = "error"   // the tool ran and failed (data for the model)
	VerdictRefused Verdict = "refused" // the dial gate refused it; the tool did not run
	VerdictInvalid Verdict = "invalid" // arguments failed validation; the tool did not run
	VerdictUnknown Verdict = "unknown" // no such tool
)

// Outcome is the result of Dispatch.
type Outcome struct {
	Verdict Verdict
	Result  Result
	Latency time.Duration
}

// Dispatch is the one path every tool call takes, from the agent loop and
// from `fleetd tool call` alike: look the tool up, read the dial (fresh, on
// every call) and refuse a call above it before anything runs, validate the
// arguments, run the handler, and stamp ok and latency_ms (unless the
// handler measured its own). The returned
// error is only a handler's infrastructure failure.
func (r *Registry) Dispatch(ctx context.Context, dial DialSource, name string, args json.RawMessage) (Outcome, error) {
	start := time.Now()
	finish := func(v Verdict, res Result) Outcome {
		lat := time.Since(start)
		if _, ok := res["ok"]; !ok {
			res["ok"] = v == VerdictOK
		}
		if _, own := res["latency_ms"]; !own {
			// A tool that waits for its turn before a request (request
			// pacing) reports the request's own time; the Outcome keeps
			// the whole call's.
			res["latency_ms"] = lat.Milliseconds()
		}
		return Outcome{Verdict: v, Result: res, Latency: lat}
	}
	t, ok := r.tools[name]
	if !ok {
		names := make([]string, 0, len(r.tools))
		for n := range r.tools {
			names = append(names, n)
		}
		sort.Strings(names)
		return finish(VerdictUnknown, Fail("unknown tool %q (available: %s)", name, strings.Join(names, ", "))), nil
	}
	current, derr := dial.Dial() // fails closed to Observe
	if !current.Allows(t.Rung) {
		msg := fmt.Sprintf("refused: needs dial %s, dial is %s", t.Rung, current)
		if derr != nil {
			msg += " (" + derr.Error() + ")"
		}
		return finish(VerdictRefused, Result{"ok": false, "error": msg}), nil
	}
	if err := t.Validate(args); err != nil {
		return finish(VerdictInvalid, Fail("%v", err)), nil
	}
	res, err := t.Handler.Call(withDial(ctx, current), args)
	if err != nil {
		if res == nil {
			res = Fail("%v", err)
		}
		return finish(VerdictError, res), err
	}
	if res == nil {
		res = Fail("tool returned no result")
	}
	v := VerdictOK
	if !res.IsOK() {
		v = VerdictError
		if _, has := res["error"]; !has {
			res["error"] = "tool reported failure"
		}
	}
	return finish(v, res), nil
}
