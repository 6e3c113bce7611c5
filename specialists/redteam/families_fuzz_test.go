package redteam

import (
	"strings"
	"testing"
)

// FuzzParseFamily: a probe family file is input an operator may supply;
// parsing never panics, and a family it accepts is complete.
func FuzzParseFamily(f *testing.F) {
	entries, _ := familyFS.ReadDir("families")
	for _, e := range entries {
		b, _ := familyFS.ReadFile("families/" + e.Name())
		f.Add(b)
	}
	f.Add([]byte("family: x\nversion: 1\ntitle: t\ncwe: CWE-1\nseverity: low\ndetect: [secrets]\nprobes: [{id: a, message: m}]"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fam, err := ParseFamily("f.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if fam.Name == "" || fam.Version < 1 || len(fam.Probes) == 0 || len(fam.Detect) == 0 {
			t.Fatalf("accepted an incomplete family: %+v", fam)
		}
		v := familyVars{target: "t", other: "o", canaryA: "qa1", canaryB: "ok2", numA: 1000, numB: 10000}
		for _, p := range fam.Probes {
			if strings.TrimSpace(v.expand(p.Message)) == "" {
				t.Fatalf("accepted an empty message: %+v", p)
			}
		}
	})
}
