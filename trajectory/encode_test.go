package trajectory

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unsafe"
)

type node struct {
	Name string `json:"name"`
	Next *node  `json:"next,omitempty"`
}

type withFunc struct {
	Fn func() `json:"fn"`
}

type badMarshaler struct{}

func (badMarshaler) MarshalJSON() ([]byte, error) { return nil, errors.New("boom") }

type liarMarshaler struct{}

func (liarMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{"a":`), nil }

// ptrMarshaler fails, but only where encoding/json calls it: on addressable
// values such as slice elements, not on map values.
type ptrMarshaler struct {
	N int `json:"n"`
}

func (*ptrMarshaler) MarshalJSON() ([]byte, error) { return nil, errors.New("ptr boom") }

type embedded struct {
	Inner float64 `json:"inner"`
}

type outer struct {
	embedded
	Skipped func() `json:"-"`
	hidden  chan int
	Empty   func() `json:"empty,omitzero"`
}

func TestValidateEncodableFailsLoud(t *testing.T) {
	cyclic := &node{Name: "a"}
	cyclic.Next = &node{Name: "b", Next: cyclic}
	cyclicMap := map[string]any{"x": 1}
	cyclicMap["self"] = map[string]any{"back": cyclicMap}
	cyclicSlice := []any{1, nil}
	cyclicSlice[1] = cyclicSlice
	items := []any{1, "two", 3.0, withFunc{Fn: func() {}}}

	tests := []struct {
		name   string
		v      any
		field  string
		reason string
	}{
		{"func in slice", map[string]any{"items": items}, "turn.result.items[3].fn", "func"},
		{"NaN", map[string]any{"p50": math.NaN()}, "turn.result.p50", "NaN"},
		{"+Inf", struct {
			Gas float64 `json:"gas"`
		}{math.Inf(1)}, "turn.result.gas", "+Inf"},
		{"-Inf float32", []float32{0, float32(math.Inf(-1))}, "turn.result[1]", "-Inf"},
		{"chan", map[string]any{"done": make(chan struct{})}, "turn.result.done", "channel"},
		{"func", func() {}, "turn.result", "func"},
		{"complex", map[string]any{"z": complex(1, 2)}, "turn.result.z", "complex number"},
		{"unsafe pointer", map[string]any{"p": unsafe.Pointer(&items)}, "turn.result.p", "unsafe.Pointer"},
		{"cycle via pointer", cyclic, "turn.result.next.next", "cycle"},
		{"cycle via map", map[string]any{"m": cyclicMap}, "turn.result.m.self.back", "cycle"},
		{"cycle via slice", cyclicSlice, "turn.result[1]", "cycle"},
		{"invalid RawMessage", map[string]any{"raw": json.RawMessage(`{"a":1`)}, "turn.result.raw", "invalid JSON in json.RawMessage"},
		{"empty RawMessage", []json.RawMessage{{}}, "turn.result[0]", "empty json.RawMessage"},
		{"quoted key", map[string]any{"a.b": math.NaN()}, `turn.result["a.b"]`, "NaN"},
		{"bad map key", map[[2]int]string{{1, 2}: "x"}, "turn.result", "map key type [2]int"},
		{"MarshalJSON error", map[string]any{"m": badMarshaler{}}, "turn.result.m", "MarshalJSON"},
		{"MarshalJSON invalid", map[string]any{"m": liarMarshaler{}}, "turn.result.m", "MarshalJSON returned invalid JSON"},
		{"invalid Number", map[string]any{"n": json.Number("12abc")}, "turn.result.n", `invalid json.Number "12abc"`},
		{"time out of range", map[string]any{"at": time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "turn.result.at", "time year 10000 outside [0,9999]"},
		{"promoted field", outer{embedded: embedded{Inner: math.NaN()}}, "turn.result.inner", "NaN"},
		{"pointer marshaler on a slice element", []ptrMarshaler{{1}}, "turn.result[0]", "MarshalJSON"},
		{"first of many, by key order", map[string]any{"b": math.NaN(), "a": math.Inf(1), "c": func() {}}, "turn.result.a", "+Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turn := Turn{Result: tt.v}
			err := ValidateEncodable(turn, "turn")
			var ue *UnserializableError
			if !errors.As(err, &ue) {
				t.Fatalf("ValidateEncodable = %v, want *UnserializableError", err)
			}
			if ue.Field != tt.field || ue.Reason != tt.reason {
				t.Errorf("got field %q reason %q, want %q %q", ue.Field, ue.Reason, tt.field, tt.reason)
			}
			if _, err := Marshal(turn, "turn"); !errors.As(err, &ue) || ue.Field != tt.field {
				t.Errorf("Marshal = %v, want the same field", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("message %q does not name the field", err)
			}
		})
	}
}

func TestValidateEncodableAccepts(t *testing.T) {
	shared := &node{Name: "shared"}
	var nilMarshaler *time.Time
	tests := []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"shared pointer is not a cycle", []*node{shared, shared}},
		{"shared map is not a cycle", func() any { m := map[string]int{"a": 1}; return []any{m, m} }()},
		{"skipped fields", outer{}},
		{"bytes", []byte{0, 1, 2}},
		{"nil RawMessage", json.RawMessage(nil)},
		{"nil marshaler pointer", nilMarshaler},
		{"int keys", map[int]float64{2: 1, 1: 0.5}},
		{"number", json.Number("-1.5e10")},
		{"empty number", json.Number("")},
		{"max float", math.MaxFloat64},
		{"pointer marshaler not called on map values", map[string]ptrMarshaler{"a": {1}}},
		{"map of any", map[string]any{"b": []any{1.5, "x", nil}, "a": map[string]string{"k": "v"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ValidateEncodable(tt.v, "v"); err != nil {
				t.Fatalf("ValidateEncodable: %v", err)
			}
			got, err := Marshal(tt.v, "v")
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			want, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			if string(got) != string(want) {
				t.Errorf("Marshal = %s, json.Marshal = %s", got, want)
			}
		})
	}
}

func TestIsValidNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "1.5": true, "1e9": true, "1E+9": true, "-1.5e-3": true,
		"": false, "-": false, "01": false, "1.": false, ".5": false, "1e": false, "1e+": false, "+1": false, "0x1": false, "NaN": false,
	} {
		if got := isValidNumber(s); got != want {
			t.Errorf("isValidNumber(%q) = %v, want %v", s, got, want)
		}
		if got := isValidNumber([]byte(s)); got != want {
			t.Errorf("isValidNumber([]byte %q) = %v, want %v", s, got, want)
		}
	}
}

func TestWriteTurnUnserializableWritesNothing(t *testing.T) {
	w := mustCreate(t, "r-fail")
	before := mustReadFile(t, w.Path())
	turn := sampleTurn(0)
	turn.Result = map[string]any{"items": []any{1, 2, 3, map[string]any{"fn": func() {}}}}
	err := w.WriteTurn(turn)
	var ue *UnserializableError
	if !errors.As(err, &ue) || ue.Field != "turn.result.items[3].fn" {
		t.Fatalf("WriteTurn = %v, want *UnserializableError at turn.result.items[3].fn", err)
	}
	if after := mustReadFile(t, w.Path()); string(after) != string(before) {
		t.Errorf("file changed after a refused turn:\n%s", after)
	}
	// The index was not consumed: the loop can write a corrected turn 0.
	if err := w.WriteTurn(sampleTurn(0)); err != nil {
		t.Fatalf("WriteTurn after refusal: %v", err)
	}
	for _, bad := range []Turn{
		{Index: 1, ProposedAction: &Action{Tool: "qa_call", Args: json.RawMessage(`{"target":`)}},
		{Index: 1, Observation: math.NaN()},
	} {
		if err := w.WriteTurn(bad); !errors.As(err, &ue) {
			t.Errorf("WriteTurn(%+v) = %v, want *UnserializableError", bad, err)
		}
	}
	if !strings.Contains(w.WriteTurn(Turn{Index: 1, ProposedAction: &Action{Args: json.RawMessage(`{`)}}).Error(), "turn.proposed_action.args") {
		t.Error("error does not name turn.proposed_action.args")
	}
}
