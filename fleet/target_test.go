package fleet

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRepoValidate(t *testing.T) {
	tests := []struct {
		name string
		repo Repo
		want []string // substrings of the error; none means valid
	}{
		{"minimal", Repo{URL: "https://example.com/x.git"}, nil},
		{"full", Repo{URL: "../src", Base: "dev", FuzzPackage: "./compiler", FuzzTarget: "FuzzCompile",
			Surfaces: []string{"compiler"}}, nil},
		{"layout", Repo{URL: "x", Regression: Regression{Dir: "t", File: "r_{fp}.sh", Test: []string{"sh", "{file}"}}}, nil},
		{"no url", Repo{}, []string{"target.repo.url: required"}},
		{"bad base", Repo{URL: "x", Base: "a..b"}, []string{"target.repo.base"}},
		{"option base", Repo{URL: "x", Base: "-f"}, []string{"target.repo.base"}},
		{"fuzz half", Repo{URL: "x", FuzzTarget: "FuzzX"}, []string{"fuzz_package and fuzz_target go together"}},
		{"fuzz name", Repo{URL: "x", FuzzPackage: ".", FuzzTarget: "TestX"}, []string{"target.repo.fuzz_target"}},
		{"layout half", Repo{URL: "x", Regression: Regression{Dir: "t"}}, []string{"target.repo.regression: dir, file and test"}},
		{"c build", Repo{URL: "x", Build: []string{"sh", "-c", "$CC -o {out} main.c"}, Harness: "fuzz/h.c"}, nil},
		{"build no out", Repo{URL: "x", Build: []string{"make"}}, []string{"target.repo.build: no argument holds {out}"}},
		{"harness alone", Repo{URL: "x", Harness: "h.c"}, []string{"target.repo.harness: needs target.repo.build"}},
		{"harness outside", Repo{URL: "x", Build: []string{"{out}"}, Harness: "../h.c"}, []string{"target.repo.harness"}},
		{"harness not c", Repo{URL: "x", Build: []string{"{out}"}, Harness: "h.go"}, []string{"target.repo.harness: \"h.go\" is not a C"}},
		{"surface", Repo{URL: "x", Surfaces: []string{"Not A Surface"}}, []string{"target.repo.surfaces[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.repo.Validate("target.repo")
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: no error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %v, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestRepoDefaultsAndOwnership(t *testing.T) {
	var none *Repo
	if none.Owns(Surface("compiler")) || none.BaseBranch() != "main" || !cmp.Equal(none.TestCommand(), []string{"go", "test", "./..."}) {
		t.Errorf("nil repo: owns=%v base=%q test=%q", none.Owns("compiler"), none.BaseBranch(), none.TestCommand())
	}
	r := &Repo{URL: "x", Base: "dev", Test: []string{"make", "test"}, Surfaces: []string{"compiler"}}
	if !r.Owns("compiler") || r.Owns("face") || r.BaseBranch() != "dev" || r.TestCommand()[0] != "make" {
		t.Errorf("repo: owns compiler=%v face=%v base=%q test=%q", r.Owns("compiler"), r.Owns("face"), r.BaseBranch(), r.TestCommand())
	}
	if all := (&Repo{URL: "x"}); !all.Owns("face") {
		t.Error("a repo without surfaces owns every surface")
	}
}

func TestAuthValidate(t *testing.T) {
	good := Auth{Nonce: "http://127.0.0.1:1/n", Verify: "http://127.0.0.1:1/v", Accounts: map[string]string{"admin": "keys/a.key"}}
	if err := good.Validate("target.auth"); err != nil {
		t.Fatalf("good auth: %v", err)
	}
	for name, tc := range map[string]struct {
		a    Auth
		want string
	}{
		"nonce alone":    {Auth{Nonce: "http://127.0.0.1:1/n"}, "target.auth: nonce and verify go together"},
		"bad url":        {Auth{Nonce: "ftp://x/n", Verify: "http://127.0.0.1:1/v"}, "target.auth.nonce"},
		"bad role":       {Auth{Accounts: map[string]string{"Admin Role": "k"}}, `target.auth.accounts: identity "Admin Role"`},
		"empty key file": {Auth{Accounts: map[string]string{"admin": " "}}, "target.auth.accounts.admin: empty"},
	} {
		if err := tc.a.Validate("target.auth"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, tc.want)
		}
	}
}
