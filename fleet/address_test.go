package fleet

import (
	"encoding/json"
	"testing"
)

func TestParseAddress(t *testing.T) {
	const lower = "0x52908400098527886e0f7030069857d2e4169ee7"
	tests := []struct {
		in      string
		want    string
		wantErr string
	}{
		{in: lower, want: lower},
		{in: "0x52908400098527886E0F7030069857D2E4169EE7", want: lower},
		{in: "0X52908400098527886e0f7030069857d2e4169ee7", want: lower},
		{in: "0x0000000000000000000000000000000000000000", want: "0x0000000000000000000000000000000000000000"},
		{in: "52908400098527886e0f7030069857d2e4169ee7", wantErr: `invalid address "52908400098527886e0f7030069857d2e4169ee7": want 0x followed by 40 hex digits`},
		{in: "0x52908400098527886e0f7030069857d2e4169ee", wantErr: `invalid address "0x52908400098527886e0f7030069857d2e4169ee": want 0x followed by 40 hex digits`},
		{in: "0x52908400098527886e0f7030069857d2e4169eg7", wantErr: `invalid address "0x52908400098527886e0f7030069857d2e4169eg7": want 0x followed by 40 hex digits`},
		{in: "0x52908400098527886e0f7030069857d2e4169eeg", wantErr: `invalid address "0x52908400098527886e0f7030069857d2e4169eeg": want 0x followed by 40 hex digits`},
		{in: "", wantErr: `invalid address "": want 0x followed by 40 hex digits`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseAddress(tt.in)
			if gotErr := errString(err); gotErr != tt.wantErr {
				t.Fatalf("ParseAddress(%q) error = %q, want %q", tt.in, gotErr, tt.wantErr)
			}
			if err != nil {
				if !got.IsZero() {
					t.Errorf("ParseAddress(%q) = %v with an error, want the zero address", tt.in, got)
				}
				return
			}
			if got.String() != tt.want {
				t.Errorf("ParseAddress(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestAddressText(t *testing.T) {
	a, err := ParseAddress("0x52908400098527886E0F7030069857D2E4169EE7")
	if err != nil {
		t.Fatal(err)
	}
	if a.IsZero() {
		t.Fatal("IsZero() = true for a non-zero address")
	}
	b, err := json.Marshal(map[string]Address{"sender": a})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"sender":"0x52908400098527886e0f7030069857d2e4169ee7"}`; string(b) != want {
		t.Errorf("marshal = %s, want %s", b, want)
	}
	var got map[string]Address
	if err := json.Unmarshal(b, &got); err != nil || got["sender"] != a {
		t.Errorf("unmarshal %s = %v, %v; want %v", b, got, err, a)
	}
	if err := json.Unmarshal([]byte(`{"sender":"0x12"}`), &got); err == nil {
		t.Error("unmarshal of a short address succeeded")
	}
}
