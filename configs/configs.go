// Package configs embeds fleetd's packaged configuration: the default
// specialists (personas/*.yaml) and the documented example config, so a
// binary installed alone still has them.
package configs

import "embed"

// Personas holds personas/*.yaml, the default specialists.
//
//go:embed personas/*.yaml
var Personas embed.FS

// Example is fleetd.example.yaml.
//
//go:embed fleetd.example.yaml
var Example []byte
