package fleet

import (
	"strings"
	"testing"
)

func TestParseSurface(t *testing.T) {
	tests := []struct {
		in      string
		want    Surface
		wantErr string
	}{
		{in: "compiler", want: SurfaceCompiler},
		{in: "Chain", want: SurfaceChain},
		{in: "face.v2", want: "face.v2"},
		{in: "9p-fs_x", wantErr: `invalid surface "9p-fs_x": want a token [a-z0-9][a-z0-9._-]{0,31}`},
		{in: "call-endpoint", want: "call-endpoint"},
		{in: strings.Repeat("a", 32), want: Surface(strings.Repeat("a", 32))},
		{in: strings.Repeat("a", 33), wantErr: `invalid surface "` + strings.Repeat("a", 33) + `": want a token [a-z0-9][a-z0-9._-]{0,31}`},
		{in: "", wantErr: `invalid surface "": want a token [a-z0-9][a-z0-9._-]{0,31}`},
		{in: "-chain", wantErr: `invalid surface "-chain": want a token [a-z0-9][a-z0-9._-]{0,31}`},
		{in: "a b", wantErr: `invalid surface "a b": want a token [a-z0-9][a-z0-9._-]{0,31}`},
		{in: "café", wantErr: `invalid surface "café": want a token [a-z0-9][a-z0-9._-]{0,31}`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSurface(tt.in)
			if gotErr := errString(err); gotErr != tt.wantErr {
				t.Fatalf("ParseSurface(%q) error = %q, want %q", tt.in, gotErr, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseSurface(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if err == nil && !got.Valid() {
				t.Errorf("%q.Valid() = false for a parsed surface", got)
			}
		})
	}
	for _, s := range []Surface{SurfaceChain, SurfaceRegistry, SurfaceCompiler, SurfaceFace, SurfaceCall, SurfaceDocs, SurfaceFeedback, SurfaceFleet} {
		if !s.Valid() {
			t.Errorf("well-known surface %q is not Valid", s)
		}
	}
	if Surface("Chain").Valid() {
		t.Error(`Surface("Chain").Valid() = true, want false: Valid wants the lowercase form`)
	}
}
