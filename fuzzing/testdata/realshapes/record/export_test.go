package record

// Normalize exports normalize to the external test package.
var Normalize = normalize
