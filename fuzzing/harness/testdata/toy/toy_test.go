package toy

import "testing"

var sample = "[x,y]"

func TestParse(t *testing.T) {
	if _, err := Parse("[a,b]"); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(sample); err != nil {
		t.Fatal(err)
	}
	if Sum([]int64{1, 2}) != 3 {
		t.Fatal("sum")
	}
}
