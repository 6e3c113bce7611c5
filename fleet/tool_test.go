package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type echoArgs struct {
	Source string `json:"source" desc:"program text" maxlen:"10"`
	Mode   string `json:"mode,omitempty" enum:"fast,slow"`
	N      int    `json:"n,omitempty"`
}

type fixedDial Dial

func (d fixedDial) Dial() (Dial, error) { return Dial(d), nil }

func newTestRegistry(t *testing.T, calls *int) *Registry {
	t.Helper()
	r := NewRegistry()
	read := NewTool("qa_read", "reads", Observe, func(_ context.Context, a echoArgs) (Result, error) {
		*calls++
		return OK(map[string]any{"echo": a.Source, "n": a.N}), nil
	})
	write := NewTool("qa_write", "writes", Exercise, func(_ context.Context, a echoArgs) (Result, error) {
		*calls++
		return OK(nil), nil
	})
	fail := NewTool("qa_fail", "fails", Observe, func(context.Context, echoArgs) (Result, error) {
		*calls++
		return Fail("compiler crashed"), nil
	})
	for _, tl := range []Tool{read, write, fail} {
		if err := r.Add(tl); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func TestSchemaFor(t *testing.T) {
	no := false
	got := SchemaFor(reflectTypeOf[echoArgs]())
	want := &Schema{Type: "object", AdditionalProperties: &no, Required: []string{"source"}, Properties: map[string]*Schema{
		"source": {Type: "string", Description: "program text", MaxLength: 10},
		"mode":   {Type: "string", Enum: []string{"fast", "slow"}},
		"n":      {Type: "integer"},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("schema (-want +got):\n%s", d)
	}
}

func TestDispatch(t *testing.T) {
	calls := 0
	r := newTestRegistry(t, &calls)
	ctx := context.Background()
	for _, tc := range []struct {
		name, tool, args string
		dial             Dial
		verdict          Verdict
		errHas           string
		ran              bool
	}{
		{"ok", "qa_read", `{"source":"x"}`, Observe, VerdictOK, "", true},
		{"refused at observe", "qa_write", `{"source":"x"}`, Observe, VerdictRefused, "refused: needs dial exercise, dial is observe", false},
		{"allowed at exercise", "qa_write", `{"source":"x"}`, Exercise, VerdictOK, "", true},
		{"allowed at propose", "qa_write", `{"source":"x"}`, Propose, VerdictOK, "", true},
		{"missing required", "qa_read", `{}`, Observe, VerdictInvalid, `invalid argument "source": required`, false},
		{"null args", "qa_read", `null`, Observe, VerdictInvalid, `"source": required`, false},
		{"unknown arg", "qa_read", `{"source":"x","sauce":1}`, Observe, VerdictInvalid, `invalid argument "sauce": unknown argument`, false},
		{"wrong type", "qa_read", `{"source":5}`, Observe, VerdictInvalid, `"source": want string, got number`, false},
		{"not integer", "qa_read", `{"source":"x","n":1.5}`, Observe, VerdictInvalid, `"n": want an integer`, false},
		{"too long", "qa_read", `{"source":"12345678901"}`, Observe, VerdictInvalid, `longer than the maximum 10`, false},
		{"enum", "qa_read", `{"source":"x","mode":"medium"}`, Observe, VerdictInvalid, `not one of fast, slow`, false},
		{"not an object", "qa_read", `["x"]`, Observe, VerdictInvalid, "want a JSON object", false},
		{"malformed json", "qa_read", `{"source":`, Observe, VerdictInvalid, "want a JSON object", false},
		{"tool error is data", "qa_fail", `{"source":"x"}`, Observe, VerdictError, "compiler crashed", true},
		{"unknown tool", "qa_nope", `{}`, Propose, VerdictUnknown, `unknown tool "qa_nope" (available: qa_fail, qa_read, qa_write)`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := calls
			out, err := r.Dispatch(ctx, fixedDial(tc.dial), tc.tool, json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if out.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s (%v)", out.Verdict, tc.verdict, out.Result)
			}
			if ran := calls > before; ran != tc.ran {
				t.Errorf("handler ran = %v, want %v", ran, tc.ran)
			}
			if _, ok := out.Result["latency_ms"]; !ok {
				t.Error("no latency_ms")
			}
			if ok := out.Result.IsOK(); ok != (tc.verdict == VerdictOK) {
				t.Errorf("ok = %v", ok)
			}
			if tc.errHas != "" && !strings.Contains(out.Result.Err(), tc.errHas) {
				t.Errorf("error %q lacks %q", out.Result.Err(), tc.errHas)
			}
		})
	}
}

// errDial always fails to read: the gate must fail closed to observe.
type errDial struct{}

func (errDial) Dial() (Dial, error) { return Observe, errors.New("disk on fire") }

func TestDispatchFailsClosed(t *testing.T) {
	calls := 0
	r := newTestRegistry(t, &calls)
	out, _ := r.Dispatch(context.Background(), errDial{}, "qa_write", json.RawMessage(`{"source":"x"}`))
	if out.Verdict != VerdictRefused || calls != 0 || !strings.Contains(out.Result.Err(), "disk on fire") {
		t.Errorf("unreadable dial: %+v, calls %d", out, calls)
	}
	// Dispatch reads the dial on every call: lowering it takes effect at once.
	d := NewControl(t.TempDir())
	d.SetDial(Exercise, "test", "t")
	if out, _ := r.Dispatch(context.Background(), d, "qa_write", json.RawMessage(`{"source":"x"}`)); out.Verdict != VerdictOK {
		t.Fatalf("at exercise: %+v", out)
	}
	d.SetDial(Observe, "test", "t")
	if out, _ := r.Dispatch(context.Background(), d, "qa_write", json.RawMessage(`{"source":"x"}`)); out.Verdict != VerdictRefused {
		t.Errorf("after lowering: %+v", out)
	}
}

func TestRegistryAdd(t *testing.T) {
	r := NewRegistry()
	h := HandlerFunc(func(context.Context, json.RawMessage) (Result, error) { return OK(nil), nil })
	for _, bad := range []Tool{{Name: "", Handler: h}, {Name: "compile", Handler: h}, {Name: "qa_x"}, {Name: "qa_y", Handler: h, Rung: 7}} {
		if err := r.Add(bad); err == nil {
			t.Errorf("Add(%+v) accepted", bad)
		}
	}
	if err := r.Add(Tool{Name: "qa_x", Handler: h}); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(Tool{Name: "qa_x", Handler: h}); err == nil {
		t.Error("duplicate accepted")
	}
	if _, err := r.Subset([]string{"qa_x", "qa_nope"}); err == nil || !strings.Contains(err.Error(), "qa_nope") {
		t.Errorf("Subset unknown = %v", err)
	}
}

func reflectTypeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }
