package inject

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPostForms reads the forms that send a body from a page as served.
func TestPostForms(t *testing.T) {
	page := "http://shop.test/a/b"
	for _, tc := range []struct {
		name string
		body string
		want []PostForm
	}{
		{"fields, types and values", `<form method=POST action="/send"><input name=title><textarea name=body></textarea>` +
			`<input type=email name=mail><input type=hidden name=csrf value=t0k><input type=password name=pw><input type=submit name=go value=Send></form>`,
			[]PostForm{{Page: page, Action: "http://shop.test/send", Method: "POST", Enctype: "form", Fields: []FormField{
				{Name: "title"}, {Name: "body", Type: "textarea"}, {Name: "mail", Type: "email"}, {Name: "csrf", Type: "hidden", Value: "t0k"}}}}},
		{"multipart, no action: the page itself", `<form method="post" enctype="Multipart/Form-Data"><input name=q></form>`,
			[]PostForm{{Page: page, Action: "http://shop.test/a/b", Method: "POST", Enctype: "multipart", Fields: []FormField{{Name: "q"}}}}},
		{"GET forms and forms without a text field left out", `<form action=/s><input name=q></form><form method=post action=/x><input type=checkbox name=c></form>`, nil},
		{"a field named twice once", `<form method=post action=/x><input name=a><input name=a value=2></form>`,
			[]PostForm{{Page: page, Action: "http://shop.test/x", Method: "POST", Enctype: "form", Fields: []FormField{{Name: "a"}}}}},
		{"unclosed form", `<form method=post action=/x><input name=a>`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PostForms(page, tc.body)); diff != "" {
				t.Errorf("PostForms (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzPostForms: any page gives forms that are POST, have an absolute
// http(s) action, at most postFields named fields each, one a text field,
// and submit arguments naming every field.
func FuzzPostForms(f *testing.F) {
	for _, s := range []string{
		`<form method=post action="/send" enctype=multipart/form-data><input name=t><textarea name=b></textarea></form>`,
		`<form method=POST><input name=a value="x"><select name=s><option>1</select></form>`,
		`<form method=post action="javascript:x()"><input name=a></form><form method=post action=//evil.test/><input name=b>`,
		`<form method=post action=/x><form><input name=a></form></form>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, pf := range PostForms("https://site.test/dir/page", body) {
			if pf.Method != "POST" || !strings.HasPrefix(pf.Action, "http://") && !strings.HasPrefix(pf.Action, "https://") {
				t.Fatalf("form %+v", pf)
			}
			if len(pf.Fields) == 0 || len(pf.Fields) > postFields || !hasText(pf.Fields) {
				t.Fatalf("fields %+v", pf.Fields)
			}
			args := pf.submitArgs(nil)
			if fs := args["fields"].(map[string]any); len(fs) != len(pf.Fields) {
				t.Fatalf("submit args %v for fields %+v", args, pf.Fields)
			}
		}
	})
}
