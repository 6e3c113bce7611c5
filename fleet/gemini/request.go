package gemini

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"google.golang.org/genai"
)

// preamble opens every system instruction, before the persona.
const preamble = `You are a QA probe run by fleetd, an autonomous QA fleet. You test the platform described in the first message by calling the functions you are given, one call per reply; every result comes back as JSON with "ok" and, when ok is false, "error".
Rules:
- Act only through function calls. Never invent a result or claim a check ran when you did not call a function for it.
- Report every real problem you find with qa_report: one finding per problem, with a repro call when you have one. A call refused by the autonomy dial or rejected for invalid arguments is not a finding.
- When you are done, reply with a plain-text summary of what you tested and found, without a function call.`

// request builds the whole generateContent request from the state.
func (m *Model) request(s *fleet.State) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	decls := make([]*genai.FunctionDeclaration, 0, len(s.Tools))
	for _, t := range s.Tools {
		d, err := declare(t)
		if err != nil {
			return nil, nil, err
		}
		decls = append(decls, d)
	}

	system := preamble + "\nThe autonomy dial is " + s.Dial.String() + "."
	if p := strings.TrimSpace(s.Persona); p != "" {
		system += "\n\n" + p
	}
	gcfg := &genai.GenerateContentConfig{
		SystemInstruction: &genai.Content{Parts: []*genai.Part{{Text: system}}},
		Temperature:       m.temperature,
		MaxOutputTokens:   m.maxOutput,
	}
	if len(decls) > 0 {
		gcfg.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	}

	contents := []*genai.Content{{Role: genai.RoleUser, Parts: []*genai.Part{{Text: goalText(s)}}}}
	for _, ex := range s.History {
		id, sig := unpackID(ex.Call.ID)
		contents = append(contents,
			&genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{
				FunctionCall:     &genai.FunctionCall{ID: id, Name: ex.Call.Tool, Args: callArgs(ex.Call.Args)},
				ThoughtSignature: sig,
			}}},
			&genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{
				FunctionResponse: &genai.FunctionResponse{ID: id, Name: ex.Call.Tool, Response: response(ex)},
			}}},
		)
	}
	if s.Retry != "" {
		// Appended to the last user turn (the goal or the latest function
		// response), so model and user turns keep alternating.
		last := contents[len(contents)-1]
		last.Parts = append(last.Parts, &genai.Part{Text: "Your previous reply could not be used: " + s.Retry +
			". Reply again: call exactly one of the declared functions with arguments that match its schema, or, if you are finished, reply with a plain-text summary and no function call."})
	}
	return contents, gcfg, nil
}

// goalText is the first user turn: the goal and what is being tested.
func goalText(s *fleet.State) string {
	var b strings.Builder
	b.WriteString("Goal: " + s.Goal)
	if s.RunID != "" || s.Specialist != "" {
		fmt.Fprintf(&b, "\n\nRun %s, specialist %s.", s.RunID, s.Specialist)
	}
	if !reflect.ValueOf(s.Target).IsZero() {
		if t, err := json.MarshalIndent(s.Target, "", "  "); err == nil {
			b.WriteString("\n\nThe platform under test:\n" + string(t))
		}
	}
	return b.String()
}

// callArgs decodes the arguments of a past call. They came from this adapter
// (a JSON object), but the host records whatever it was given, so anything
// else is passed on as text rather than dropped.
func callArgs(raw json.RawMessage) map[string]any {
	if len(raw) == 0 {
		return map[string]any{}
	}
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil || args == nil {
		return map[string]any{"_unparsed_args": string(raw)}
	}
	return args
}

// response is the functionResponse for a past exchange: the tool's result
// object as the host returned it. A call that did not succeed always carries
// ok:false and an error, whatever its result held.
func response(ex fleet.Exchange) map[string]any {
	out := make(map[string]any, len(ex.Result)+2)
	for k, v := range ex.Result {
		out[k] = v
	}
	if ex.Verdict != fleet.VerdictOK && ex.Verdict != "" {
		out["ok"] = false
		if e, _ := out["error"].(string); e == "" {
			out["error"] = "call " + string(ex.Verdict)
		}
	}
	if _, ok := out["ok"]; !ok {
		out["ok"] = ex.Verdict == fleet.VerdictOK
	}
	return out
}

// declare builds the function declaration of a tool. The schema goes out as
// a genai Schema (OpenAPI subset) when Gemini can take it that way. It
// cannot when an object has no properties or an array no items (a free-form
// JSON argument such as qa_report's repro args): the API refuses those with
// "should be non-empty for OBJECT type", so such a tool's schema is sent as
// JSON Schema (parametersJsonSchema) instead, which allows them.
func declare(t fleet.Tool) (*genai.FunctionDeclaration, error) {
	d := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
	if t.Rung != fleet.Observe {
		d.Description = strings.TrimSpace(d.Description + " (needs the autonomy dial at " + t.Rung.String() + " or higher)")
	}
	s := t.Schema
	if s == nil || len(s.Properties) == 0 {
		return d, nil // no arguments: Gemini refuses an empty OBJECT
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("declare tool %s: arguments schema is %q, want object", t.Name, s.Type)
	}
	if !expressible(s) {
		d.ParametersJsonSchema = s
		return d, nil
	}
	p, err := toSchema(s, "")
	if err != nil {
		return nil, fmt.Errorf("declare tool %s: %w", t.Name, err)
	}
	d.Parameters = p
	return d, nil
}

// expressible reports whether s fits Gemini's OpenAPI schema subset.
func expressible(s *fleet.Schema) bool {
	switch s.Type {
	case "object":
		if len(s.Properties) == 0 {
			return false
		}
		for _, p := range s.Properties {
			if p == nil || !expressible(p) {
				return false
			}
		}
	case "array":
		return s.Items != nil && expressible(s.Items)
	}
	return true
}

var schemaTypes = map[string]genai.Type{
	"object":  genai.TypeObject,
	"string":  genai.TypeString,
	"integer": genai.TypeInteger,
	"number":  genai.TypeNumber,
	"boolean": genai.TypeBoolean,
	"array":   genai.TypeArray,
	"null":    genai.TypeNULL,
}

// toSchema converts a fleet schema; path names the field in errors.
func toSchema(s *fleet.Schema, path string) (*genai.Schema, error) {
	typ, ok := schemaTypes[s.Type]
	if !ok {
		where := path
		if where == "" {
			where = "arguments"
		}
		return nil, fmt.Errorf("%s: unsupported schema type %q", where, s.Type)
	}
	g := &genai.Schema{Type: typ, Description: s.Description, Enum: s.Enum, Required: s.Required}
	if s.MaxLength > 0 {
		n := int64(s.MaxLength)
		g.MaxLength = &n
	}
	if len(s.Properties) > 0 {
		g.Properties = make(map[string]*genai.Schema, len(s.Properties))
		for name, p := range s.Properties {
			ps, err := toSchema(p, joinPath(path, name))
			if err != nil {
				return nil, err
			}
			g.Properties[name] = ps
		}
	}
	if s.Items != nil {
		is, err := toSchema(s.Items, joinPath(path, "[]"))
		if err != nil {
			return nil, err
		}
		g.Items = is
	}
	return g, nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// The thought signature Gemini attaches to a function call must be sent back
// with that call on later turns (required by Gemini 3 models). fleet.Call has
// no field for it, so it travels in Call.ID after the provider's own id:
// "<id>~ts:<base64url signature>". The host treats the ID as opaque.
const sigMark = "~ts:"

func packID(id string, sig []byte) string {
	if len(sig) == 0 {
		return id
	}
	return id + sigMark + base64.RawURLEncoding.EncodeToString(sig)
}

func unpackID(packed string) (id string, sig []byte) {
	i := strings.LastIndex(packed, sigMark)
	if i < 0 {
		return packed, nil
	}
	sig, err := base64.RawURLEncoding.DecodeString(packed[i+len(sigMark):])
	if err != nil || len(sig) == 0 {
		return packed, nil
	}
	return packed[:i], sig
}
