package replay

import (
	"slices"

	"github.com/qafleet/fleetd/fleet"
)

// TargetOrigins returns the allowlisted origins of the target's URLs:
// faces (of its names), the call endpoint and the docs, in that order.
func TargetOrigins(t fleet.Target) []string {
	var urls []string
	for _, n := range t.Names {
		urls = append(urls, t.FaceURL(n))
	}
	if len(t.Names) == 0 && t.Faces != "" {
		urls = append(urls, t.FaceURL("x"))
	}
	urls = append(urls, t.Call)
	urls = append(urls, t.Docs...)
	var out []string
	for _, u := range urls {
		if o := Origin(u); o != "" && AllowedURL(t.FetchAllow, u) && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// SurfaceOf names the surface a URL belongs to.
func SurfaceOf(t fleet.Target, url string) fleet.Surface {
	switch {
	case slices.Contains(t.Docs, url):
		return fleet.SurfaceDocs
	case NameOfFace(t, url) != "":
		return fleet.SurfaceFace
	case url == t.Call:
		return fleet.SurfaceCall
	}
	return "web"
}

// NameOfFace returns the name whose face url is, among target.names.
func NameOfFace(t fleet.Target, url string) string {
	for _, n := range t.Names {
		if t.FaceURL(n) == url {
			return n
		}
	}
	return ""
}

// FirstName is the first public name, "" if none.
func FirstName(t fleet.Target) string {
	if len(t.Names) == 0 {
		return ""
	}
	return t.Names[0]
}
