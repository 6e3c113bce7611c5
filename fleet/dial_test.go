package fleet

import (
	"encoding/json"
	"testing"
)

func TestParseDial(t *testing.T) {
	tests := []struct {
		in      string
		want    Dial
		wantErr string
	}{
		{in: "observe", want: Observe},
		{in: " Exercise\n", want: Exercise},
		{in: "PROPOSE", want: Propose},
		{in: "", wantErr: `invalid dial "": want observe, exercise or propose`},
		{in: "merge", wantErr: `invalid dial "merge": want observe, exercise or propose`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDial(tt.in)
			if gotErr := errString(err); gotErr != tt.wantErr {
				t.Fatalf("ParseDial(%q) error = %q, want %q", tt.in, gotErr, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseDial(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestDialAllows(t *testing.T) {
	var zero Dial
	if zero != Observe {
		t.Fatalf("zero Dial = %v, want observe", zero)
	}
	rungs := []Dial{Observe, Exercise, Propose}
	for _, d := range rungs {
		for _, need := range rungs {
			if got, want := d.Allows(need), d >= need; got != want {
				t.Errorf("%v.Allows(%v) = %v, want %v", d, need, got, want)
			}
		}
	}
	if Observe.Allows(Exercise) {
		t.Error("observe allows exercise")
	}
}

func TestDialText(t *testing.T) {
	type config struct {
		Dial Dial `json:"dial"`
	}
	for _, d := range []Dial{Observe, Exercise, Propose} {
		b, err := json.Marshal(config{d})
		if err != nil {
			t.Fatalf("marshal %v: %v", d, err)
		}
		var got config
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if got.Dial != d || string(b) != `{"dial":"`+d.String()+`"}` {
			t.Errorf("round trip %v: got %v via %s", d, got.Dial, b)
		}
	}
	if _, err := Dial(7).MarshalText(); err == nil {
		t.Error("Dial(7).MarshalText() succeeded")
	}
	if got := Dial(7).String(); got != "dial(7)" {
		t.Errorf("Dial(7).String() = %q", got)
	}
	d := Exercise
	if err := d.UnmarshalText([]byte("all")); err == nil || d != Exercise {
		t.Errorf("UnmarshalText(all) = %v, dial now %v; want an error and exercise unchanged", err, d)
	}
}
