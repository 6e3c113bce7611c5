package fleet_test

import (
	"encoding/json"
	"fmt"

	"github.com/qafleet/fleetd/fleet"
)

func ExampleFormat() {
	text, err := fleet.Format(fleet.Finding{
		Source:   "qa-fuzz",
		Severity: fleet.SeverityHigh,
		Surface:  fleet.SurfaceCompiler,
		Run:      "r-20261122-0412",
		Summary:  "compile panic on `enum E{}` with no variants, expected a clean error.",
		Repro:    &fleet.Repro{Tool: "qa_compile", Args: json.RawMessage(`{ "source": "enum E{}" }`)},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(text)
	// Output:
	// qa/v1 source=qa-fuzz sev=high surface=compiler run=r-20261122-0412
	// compile panic on `enum E{}` with no variants, expected a clean error.
	// repro: qa_compile {"source":"enum E{}"}
}

func ExampleParse() {
	for _, text := range []string{
		"qa/v1 source=qa-ux sev=low surface=docs\ndead link in llms.txt",
		"qa/v1 source=qa-ux surface=docs\nno sev",
		"thanks, the face looks right now",
	} {
		f, err := fleet.Parse(text)
		fmt.Printf("free-form=%v sev=%s summary=%q err=%v\n", f.FreeForm, f.Severity, f.Summary, err)
	}
	// Output:
	// free-form=false sev=low summary="dead link in llms.txt" err=<nil>
	// free-form=true sev=unknown summary="qa/v1 source=qa-ux surface=docs\nno sev" err=qa/v1 header: missing required key "sev"
	// free-form=true sev=unknown summary="thanks, the face looks right now" err=<nil>
}

func ExampleFingerprint() {
	a, _ := fleet.Parse("qa/v1 source=qa-fuzz sev=high surface=compiler\ncrash\nrepro: qa_compile {\"source\":\"enum E{}\"}")
	b, _ := fleet.Parse("qa/v1 source=qa-smoke sev=medium surface=compiler\nsame crash, other words\nrepro: qa_compile { \"Source\" : \"ENUM E{}\" }")
	fmt.Println(fleet.Fingerprint(a), fleet.Fingerprint(a) == fleet.Fingerprint(b))
	// Output:
	// bb42023ecca2ae61 true
}
